"""Which outputs take the buffer of an operand that dies where they are made (XLA's buffer reuse).

Replaying the live ranges in time order as XLA's HeapSimulator::RunComputation does, a value
defined at t may share the buffer of an operand value whose range ends at t when both are alone
in their buffers (`aliasing.py`), no other value defined at t took it first, and
HloDataflowAnalysis::CanShareOperandBufferWithUser allows it: equal shapes (layout included)
and an in-place pair (`inplace.py`); else the backend's hint where it gives one; else, for
equal shapes, the generic rules (elementwise fusions; dynamic-update-slice / scatter /
set-dimension-size on operand 0, triangular-solve on 1; a sort's output i from operand i).
Backend hints: on TPU a synchronous `all-reduce` and the backend_config's `aliasing_operands`
pairs (`hints.py`); on GPU XLA:GPU's (`gpu_hints.py`), which decides every fusion, collective
and custom-call and may share arrays of other shapes with as many elements of one bit width.
Shared values sit at one offset of one allocation, so where they meet they are one buffer.
The rules in full and what they change: see docs/memory.md, 'How the live set is computed'.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from hloscope.analyses.memory.liveness.aliasing import UnionFind
from hloscope.analyses.memory.liveness.gpu_hints import GpuAliasInfo
from hloscope.analyses.memory.liveness.hints import hinted_pairs
from hloscope.analyses.memory.liveness.inplace import InPlaceRules
from hloscope.analyses.memory.liveness.program import FlatProgram, fused_computation
from hloscope.analyses.memory.liveness.values import Index, Value
from hloscope.model.instruction import Instruction
from hloscope.model.module import HloModule
from hloscope.model.opcodes import ELEMENTWISE_ARITHMETIC

ValueAt = Callable[[Instruction, Index], Value]

# HloInstruction::IsElementwise (xla/hlo/ir/hlo_opcode.cc IsOpElementwise): the elementwise
# arithmetic opcodes and copy; map is elementwise when it maps all dimensions (always, in HLO
# that XLA emits). dynamic-update-slice is elementwise on its operand 0 only.
_ELEMENTWISE = ELEMENTWISE_ARITHMETIC | {"copy", "map"}
_IN_PLACE_ON_FIRST = {"dynamic-update-slice": 0, "scatter": 0, "set-dimension-size": 0,
                      "triangular-solve": 1}
_CUBLAS_LT = ("__cublas$lt$matmul", "__cublas$lt$matmul$f8")

Share = tuple[int, int]
"""(operand value id, user value id): the user is made in the operand's buffer."""


def shared_buffers(program: FlatProgram, values: list[Value], ranges: dict[int, tuple[int, int]],
                   buffers: UnionFind, value_at: ValueAt,
                   outside_heap: frozenset[int] = frozenset(), backend: str = "") -> list[Share]:
    """The operand buffers XLA's heap simulator lets an instruction's output take, in order.
    `outside_heap`: values the buffer assigner placed before the heap (in an argument's or an
    output's allocation), which the heap simulator never sees."""
    sizes = Counter(buffers.find(v.id) for v in values)
    pinned = _pinned_buffers(program, values, buffers)
    alone = {v.id for v in values if sizes[buffers.find(v.id)] == 1
             and buffers.find(v.id) not in pinned and v.id not in outside_heap}
    rules = ShareRules(program.module, program.users, backend)
    freed: set[int] = set()
    shares: list[Share] = []
    ordered = sorted((v for v in values if v.id in ranges), key=lambda v: (*ranges[v.id], v.id))
    for value in ordered:
        if value.id not in alone or value.instruction.opcode in ("copy", "parameter"):
            continue
        start = ranges[value.id][0]
        operand = _operand_to_take(program, value, start, ranges, alone, freed, rules, value_at)
        if operand is not None:
            freed.add(operand.id)
            shares.append((operand.id, value.id))
    return shares


def _pinned_buffers(program: FlatProgram, values: list[Value], buffers: UnionFind) -> set[int]:
    """Buffers the heap simulator never places: those holding an entry parameter, a constant or
    an entry output get allocations of their own (BufferAssigner), so they share with nothing."""
    entry, root = program.root, program.root.root
    pinned = set()
    for value in values:
        instruction = value.instruction
        if (instruction.opcode == "constant"
                or (instruction.opcode == "parameter"
                    and program.computation_of.get(instruction) is entry)
                or any(position is root for position, _ in value.positions)):
            pinned.add(buffers.find(value.id))
    return pinned


def _operand_to_take(program: FlatProgram, value: Value, time: int,
                     ranges: dict[int, tuple[int, int]], alone: set[int], taken: set[int],
                     rules: ShareRules, value_at: ValueAt) -> Value | None:
    user = value.instruction
    operands = program.operands.get(user, [])
    for operand in operands:
        candidate = value_at(operand, ())
        if (candidate.id not in alone or candidate.id in taken or candidate.id not in ranges
                or ranges[candidate.id][1] != time or candidate.instruction not in operands):
            continue
        if rules.can_share(candidate, user, value.index, operands):
            return candidate
    return None


def can_take_operand(program: FlatProgram, rules: ShareRules, operand: Value,
                     user: Value) -> bool:
    """Whether `user` may be made in the buffer of `operand` where the operand's range ends and
    the user's begins (BufferAssigner::LiveRangeInterferes' exception, xla/service/
    buffer_assignment.cc): the user is not a copy, its instruction reads the instruction at the
    operand value's end position, and CanShareOperandBufferWithUser allows it for that position
    (a loop result read through its get-tuple-element is judged at the get-tuple-element)."""
    instruction = user.instruction
    operands = program.operands.get(instruction, [])
    position = end_position(program, operand)[0]
    return (instruction.opcode != "copy" and position in operands
            and rules.can_share(operand, instruction, user.index, operands, position))


def end_position(program: FlatProgram, value: Value) -> tuple[Instruction, Index]:
    """HloLiveRange::ComputeValueLiveRangeEnd's position (xla/hlo/utils/hlo_live_range.cc): the
    defining position, replaced by each later position whose time is strictly later (a root
    position counts at its computation's end); uses do not move it."""
    def time(instruction: Instruction) -> int:
        if program.is_root(instruction):
            span = program.spans.get(program.computation_of[instruction].name)
            return span.end if span else -1
        return program.time.get(instruction, -1)
    best = value.positions[0]
    best_time = time(best[0])
    for position in value.positions[1:]:
        position_time = time(position[0])
        if position_time > best_time:
            best, best_time = position, position_time
    return best


class ShareRules:
    """CanShareOperandBufferWithUser for one module, fused computations looked up once."""

    def __init__(self, module: HloModule,
                 users: dict[Instruction, list[tuple[Instruction, int]]] | None = None,
                 backend: str = "") -> None:
        self.module = module
        self.users = users or {}
        self.backend = backend
        self.in_place = InPlaceRules(module)
        self._users: dict[str, dict[str, list[Instruction]]] = {}
        self.gpu = GpuAliasInfo(module, _is_elementwise, self._elementwise_on)

    def can_share(self, operand_value: Value, user: Instruction, user_index: Index,
                  operands: list[Instruction], operand: Instruction | None = None) -> bool:
        """`operand` is the position the user reads the value at (default: its definer)."""
        operand = operand or operand_value.instruction
        if operand.opcode == "constant":
            return False
        if user.opcode == "custom-call" and user.custom_call_target in _CUBLAS_LT \
                and user_index == (1,):
            return False
        equal = operand_value.shape == user.shape.subshape(user_index)
        if equal and self._must_alias(operand_value, user, user_index):
            return True
        if self.backend == "gpu":
            hint = self.gpu.may_alias(operand, user, user_index, operands)
            if hint is not None:
                return hint
        if not equal:
            return False
        if user.opcode == "all-reduce" and self.backend == "tpu":
            return self._all_reduce_in_place(user, operand, user_index, operands)
        number = next(i for i, o in enumerate(operands) if o is operand)
        if self.backend == "tpu" and any((i, user_index) in hinted_pairs(user)
                                         for i, o in enumerate(operands) if o is operand):
            return True
        if user.opcode == "sort":
            return self._sort_shares(user, operand, user_index, operands)
        if user.opcode == "call":
            return self._call_shares(user, operand_value)
        return self._may_share(user, number, operand, user_index, operands)

    @staticmethod
    def _all_reduce_in_place(user: Instruction, operand: Instruction, user_index: Index,
                             operands: list[Instruction]) -> bool:
        """libtpu's may-alias hint for an all-reduce (module docstring)."""
        return len(operands) == 1 or (len(user_index) == 1 and operands[user_index[0]] is operand)

    def _sort_shares(self, user: Instruction, operand: Instruction, user_index: Index,
                     operands: list[Instruction]) -> bool:
        """A sort may write over an operand it alone reads: its only output, or the tuple
        element of the operand's position."""
        if len({id(u) for u, _ in self.users.get(operand, ())}) != 1:
            return False
        if len(operands) == 1:
            return True
        found = [i for i, o in enumerate(operands) if o is operand]
        return len(found) == 1 and bool(user_index) and user_index[0] == found[0]

    def _call_shares(self, user: Instruction, operand_value: Value) -> bool:
        """A call may write over a value used twice: by the call, and by its callee's root,
        elementwise (the root's buffer is the call's)."""
        callee = user.called_computation("to_apply")
        if callee is None or len(operand_value.uses) != 2:
            return False
        root = self.module.computation(callee.lstrip("%")).root
        return any(u is user for u, _, _ in operand_value.uses) and any(
            u is root and self._elementwise_on(root, number)
            for u, number, _ in operand_value.uses)

    def _must_alias(self, operand_value: Value, user: Instruction, user_index: Index) -> bool:
        uses = {(number, index) for u, number, index in operand_value.uses if u is user}
        return any(output == user_index and pair in uses
                   for pair, output in self.in_place.pairs(user))

    def _may_share(self, user: Instruction, number: int, operand: Instruction,
                   user_index: Index, operands: list[Instruction]) -> bool:
        opcode = user.opcode
        if opcode == "fusion":
            kind = user.fusion_kind
            if kind in ("kLoop", "kInput"):
                return self._transitively_elementwise(user, number, allow_tuple=True)
            if kind == "kOutput":
                return self._output_fusion_add(user, number)
        if opcode in ("while", "conditional"):
            return True
        if opcode in _IN_PLACE_ON_FIRST:
            found = [i for i, o in enumerate(operands) if o is operand]
            return found == [_IN_PLACE_ON_FIRST[opcode]]
        return self._elementwise_on(user, number)

    # --- elementwise ------------------------------------------------------------------------
    def _elementwise_on(self, instruction: Instruction, number: int) -> bool:
        """HloInstruction::IsElementwiseOnOperand."""
        opcode = instruction.opcode
        if opcode == "fusion":
            return self._transitively_elementwise(instruction, number, allow_tuple=False)
        if opcode == "dynamic-update-slice":
            return number == 0
        return opcode in _ELEMENTWISE

    def _transitively_elementwise(self, fusion: Instruction, number: int,
                                  allow_tuple: bool) -> bool:
        """Every use reachable from the fusion's parameter `number` is elementwise on what it
        reads (or, for AreTransitiveUsesElementwiseOrTuple, a tuple)."""
        users, parameter = self._fused(fusion, number)
        if parameter is None:
            return False
        stack, seen = [parameter], {parameter.name}
        while stack:
            current = stack.pop()
            for user in users.get(current.name, ()):
                numbers = [i for i, name in enumerate(user.operands) if name == current.name]
                if not (allow_tuple and user.opcode == "tuple") and not all(
                        self._elementwise_on(user, i) for i in numbers):
                    return False
                if user.name not in seen:
                    seen.add(user.name)
                    stack.append(user)
        return True

    def _output_fusion_add(self, fusion: Instruction, number: int) -> bool:
        """An output fusion whose root adds a dot/convolution to the parameter (its only use)."""
        users, parameter = self._fused(fusion, number)
        name = fused_computation(fusion)
        if parameter is None or name is None:
            return False
        computation = self.module.computation(name)
        root = computation.root
        if root.opcode != "add":
            return False
        by_name = {i.name: i for i in computation.instructions}
        kinds = [by_name[o].opcode if o in by_name else "" for o in root.operands]
        if "dot" not in kinds and "convolution" not in kinds:
            return False
        matched = next(i for i, k in enumerate(kinds) if k in ("dot", "convolution"))
        other = 1 if matched == 0 else 0
        param_users = users.get(parameter.name, [])
        return (len(param_users) == 1 and param_users[0] is root
                and root.operands.count(parameter.name) == 1
                and root.operands[other] == parameter.name)

    def _fused(self, fusion: Instruction, number: int
               ) -> tuple[dict[str, list[Instruction]], Instruction | None]:
        name = fused_computation(fusion)
        if name is None:
            return {}, None
        users = self._users.get(name)
        computation = self.module.computation(name)
        if users is None:
            users = {}
            for instruction in computation.instructions:
                for operand in dict.fromkeys(instruction.operands):
                    users.setdefault(operand, []).append(instruction)
            self._users[name] = users
        parameter = next((i for i in computation.instructions
                          if i.opcode == "parameter" and i.parameter_number == number), None)
        return users, parameter


def _is_elementwise(instruction: Instruction) -> bool:
    """HloInstruction::IsElementwise, no operand named (a dynamic-update-slice is not)."""
    return instruction.opcode in _ELEMENTWISE
