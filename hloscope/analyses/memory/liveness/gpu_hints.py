"""XLA:GPU's buffer-sharing hint: may this user's output take this operand's buffer?

HloDataflowAnalysis::CanShareOperandBufferWithUser asks the backend (AliasInfo::MayAlias) after
its in-place pairs and before its own rules, and takes the backend's answer when it gives one
(even for shapes that differ). XLA:GPU (xla/service/gpu/nvptx_alias_info.cc, alias_info.cc)
answers for
- an `all-reduce` (not over NVSHMEM) or `collective-broadcast`: yes when it has one operand, or
  the output element is the operand's own;
- a `custom-call`: no, except a cuBLASLt matmul whose `beta` is not 0, for its bias operand
  (operand 2, read once);
- every fusion, FusionCanShareBufferHint: the operand and the output have equal shapes, or are
  arrays of as many elements of one bit width; on every path from the fused parameter to the
  output, each op reads it elementwise (not a copy), is a bitcast or a tuple, or is the
  reduction emitter's hero reduction (which runs before any output is written, so the paths
  stop there); the output root may also be a scatter reading it as one of its inputs, a sort
  reading it once (for that sort's own output), or a dynamic-update-slice reading it as the
  update whose dynamic-slice reads the same slice; some path must reach the output; and in a
  multi-output fusion, where another root is reached too, the output's root must be
  elementwise and no reached root have a transpose or copy hero (its iteration order differs).
The emitter and heroes come from `gpu_emitter.py`.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable

from hloscope.analyses.memory.liveness.gpu_emitter import Fused, FusionAnalysis, analyze
from hloscope.analyses.memory.liveness.values import Index
from hloscope.model.instruction import Instruction
from hloscope.model.module import HloModule
from hloscope.model.shape import ELEMENT_BITS, Shape

ElementwiseOn = Callable[[Instruction, int], bool]
Elementwise = Callable[[Instruction], bool]

_CUBLAS_LT = "__cublas$lt$matmul"


class GpuAliasInfo:
    """NVPTXAliasInfo::MayAlias for one module (fused computations analysed once)."""

    def __init__(self, module: HloModule, elementwise: Elementwise,
                 elementwise_on: ElementwiseOn) -> None:
        self.module = module
        self.elementwise = elementwise
        self.elementwise_on = elementwise_on
        self._fused: dict[str, tuple[Fused, FusionAnalysis]] = {}

    def may_alias(self, operand: Instruction, user: Instruction, user_index: Index,
                  operands: list[Instruction]) -> bool | None:
        """The hint for `user` reading `operand` (None: XLA:GPU gives none)."""
        opcode = user.opcode
        if opcode in ("all-reduce", "collective-broadcast"):
            if opcode == "all-reduce" and "nvshmem" in (
                    user.raw_attribute("backend_config") or "").lower():
                return False
            return len(operands) == 1 or (len(user_index) == 1
                                          and operands[user_index[0]] is operand)
        if opcode == "custom-call":
            return self._cublas_lt_bias(operand, user, operands)
        if opcode == "fusion":
            return self._fusion_hint(operand, user, user_index, operands)
        return None

    @staticmethod
    def _cublas_lt_bias(operand: Instruction, user: Instruction,
                        operands: list[Instruction]) -> bool:
        if user.custom_call_target != _CUBLAS_LT or len(operands) < 3:
            return False
        config = user.backend_config
        gemm = config.get("gemm_backend_config") if isinstance(config, dict) else None
        beta = gemm.get("beta", 0) if isinstance(gemm, dict) else 0
        try:
            beta = float(beta)
        except (TypeError, ValueError):
            return False
        return beta != 0 and operands[2] is operand and sum(o is operand for o in operands) == 1

    def _fusion_hint(self, operand: Instruction, fusion: Instruction, user_index: Index,
                     operands: list[Instruction]) -> bool:
        """FusionCanShareBufferHint."""
        output_shape = fusion.shape.subshape(user_index)
        if not _same_size(operand.shape, output_shape):
            return False
        found = self._analysis(fusion)
        if found is None:
            return False
        fused, analysis = found
        parameter = fused.parameter(next(i for i, o in enumerate(operands) if o is operand))
        if parameter is None:
            return False
        output = fused.root
        for i in user_index:
            if output.opcode != "tuple":
                break
            output = fused.by_name[output.operands[i]]
        walk = _Walk(fused, analysis.reduction_hero, output, user_index, self.elementwise_on)
        visited = walk.run(parameter)
        if visited is None:
            return False
        if fused.root.opcode == "tuple" and not self._orders_agree(analysis, visited, output,
                                                                   walk.root):
            return False
        return output.name in visited

    def _orders_agree(self, analysis: FusionAnalysis, visited: set[str], output: Instruction,
                      root: Instruction) -> bool:
        """A multi-output fusion: where the walk reached another root too, the output's root is
        elementwise and no reached root has a transpose or copy hero."""
        reached = [(r, h) for r, h in zip(analysis.roots, analysis.heroes, strict=True)
                   if r.name in visited]
        if not any(r is not output for r, _ in reached):
            return True
        transposing = any(h.opcode in ("transpose", "copy") for _, h in reached)
        return self.elementwise(root) and not transposing

    def _analysis(self, fusion: Instruction) -> tuple[Fused, FusionAnalysis] | None:
        name = fusion.called_computation("calls")
        if name is None:
            return None
        found = self._fused.get(name)
        if found is None:
            fused = Fused.of(self.module, name)
            found = self._fused[name] = (fused, analyze(fusion, fused, self.elementwise))
        return found


class _Walk:
    """The breadth-first walk of FusionCanShareBufferHint from a fused parameter."""

    def __init__(self, fused: Fused, hero: Instruction | None, output: Instruction,
                 user_index: Index, elementwise_on: ElementwiseOn) -> None:
        self.fused = fused
        self.hero = hero
        self.output = output
        self.user_index = user_index
        self.elementwise_on = elementwise_on
        root = output
        if root.opcode == "bitcast":
            root = fused.operand(root, 0) or root
        self.root = root

    def run(self, parameter: Instruction) -> set[str] | None:
        """The names visited, or None where an op on the way forbids sharing."""
        queue, visited = deque([parameter]), {parameter.name}
        while queue:
            current = queue.popleft()
            if self.hero is not None and current is self.hero:
                continue
            for user in self.fused.users.get(current.name, ()):
                if user.name not in visited:
                    visited.add(user.name)
                    queue.append(user)
                if not self._allowed(current, user):
                    return None
        return visited

    def _allowed(self, current: Instruction, user: Instruction) -> bool:
        root, opcode = self.root, user.opcode
        number = user.operands.index(current.name)
        reads = user.operands.count(current.name)
        if user is root and opcode == "scatter":
            inputs = len(user.shape.tuple_shapes) if user.shape.is_tuple else 1
            if number < inputs and reads == 1:
                return True
        if user is root and opcode == "sort" and reads == 1:
            return self.user_index == (number,)
        if root.opcode == "dynamic-update-slice" and opcode == "dynamic-slice" \
                and root.operands[0] == user.operands[0] and self._slice_shape_matches(user):
            return self._same_slice(user)
        if ((not self.elementwise_on(user, number) or opcode == "copy")
                and opcode not in ("bitcast", "tuple") and user is not self.hero):
            return user is root and opcode == "dynamic-update-slice" and number == 1
        return True

    def _slice_shape_matches(self, dynamic_slice: Instruction) -> bool:
        update = self.fused.operand(self.root, 1)
        return update is not None and dynamic_slice.shape == update.shape

    def _same_slice(self, dynamic_slice: Instruction) -> bool:
        """The dynamic-slice reads the slice the update writes (or both are one element)."""
        update = self.fused.operand(self.root, 1)
        if update is not None and _effective_scalar(dynamic_slice.shape) and \
                _effective_scalar(update.shape):
            return True
        return list(dynamic_slice.operands[1:]) == list(self.root.operands[2:])


def _same_size(operand: Shape, output: Shape) -> bool:
    """Equal shapes, or arrays of as many elements of one bit width."""
    if operand == output:
        return True
    if operand.is_tuple or output.is_tuple or not operand.is_array or not output.is_array:
        return False
    return (operand.element_count == output.element_count
            and ELEMENT_BITS.get(operand.element_type) == ELEMENT_BITS.get(output.element_type))


def _effective_scalar(shape: Shape) -> bool:
    return shape.is_array and all(d == 1 for d in shape.dimensions)
