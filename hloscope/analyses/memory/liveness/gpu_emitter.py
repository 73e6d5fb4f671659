"""Which XLA:GPU emitter a fusion gets, and its roots and heroes: what the GPU sharing hint needs.

XLA:GPU's HloFusionAnalysis (xla/service/gpu/hlo_fusion_analysis.cc) reads a fusion's roots
(the fused root, or its tuple's operands), finds each root's *hero* (FindNonTrivialHero,
xla/service/gpu/ir_emission_utils.cc: up through unary elementwise ops and bitcasts to a
reduce, or a unique transpose or concatenate above elementwise ops) and picks an emitter:
custom, Triton, dynamic-memcpy and cuDNN fusions by their backend_config kind; the reduction
emitter when a root's hero is a *real* reduction (reduction_utils.cc: reducing to or from
contiguous dimensions, big enough to beat the loop emitter, and race-free unless the reduce is
the root itself) and the other roots fit it; the transpose emitter when the roots share one
transpose hero; else the loop emitter, whose heroes are the roots themselves.

Modelled with less detail than XLA: a transpose hero is any transpose that moves bytes (XLA also
asks its tiled transpose emitter's shape limits), and a reshape or transpose counts as a bitcast
only when the layouts keep the element order (optimized HLO states bitcasts as `bitcast`).
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from hloscope.model.instruction import Instruction
from hloscope.model.module import HloModule
from hloscope.model.shape import Shape

Elementwise = Callable[[Instruction], bool]

# FusionBackendConfig kinds that pick an emitter before any hero is looked at
# (xla/service/gpu/ir_emission_utils.h: kCustomFusionKind, kTritonFusionKind, ...).
_NAMED_EMITTERS = {"__custom_fusion": "custom", "__triton": "triton", "__triton_gemm": "triton",
                   "__triton_nested_gemm_fusion": "triton", "__triton_collective_fusion": "triton",
                   "__dynamic_memcpy": "dynamic-memcpy", "__cudnn$fusion": "cudnn"}
_WARP_SIZE = 32                 # WarpSize on NVIDIA devices
_MIN_THREADS_X_ROW = 1024       # MinThreadsXRowReduction
_BATCHED_RACE_FREE_BOUND = 8    # BatchedReductionRaceFreeBound


@dataclass(frozen=True, slots=True)
class Fused:
    """A fused computation: its instructions by name and each one's users (in order)."""

    by_name: dict[str, Instruction]
    users: dict[str, list[Instruction]]
    root: Instruction

    @classmethod
    def of(cls, module: HloModule, name: str) -> Fused:
        computation = module.computation(name)
        users: dict[str, list[Instruction]] = {}
        for instruction in computation.instructions:
            for operand in dict.fromkeys(instruction.operands):
                users.setdefault(operand, []).append(instruction)
        return cls({i.name: i for i in computation.instructions}, users, computation.root)

    def operand(self, instruction: Instruction, number: int) -> Instruction | None:
        return self.by_name.get(instruction.operands[number])

    def parameter(self, number: int) -> Instruction | None:
        return next((i for i in self.by_name.values()
                     if i.opcode == "parameter" and i.parameter_number == number), None)


@dataclass(frozen=True, slots=True)
class FusionAnalysis:
    """The emitter of a fusion, its roots and their heroes (the roots, for the loop emitter)."""

    emitter: str
    roots: tuple[Instruction, ...]
    heroes: tuple[Instruction, ...]
    reduction_hero: Instruction | None
    """HloFusionAnalysis::FindHeroReduction: the first real reduction hero, for the reduction
    emitter only."""


def analyze(fusion: Instruction, fused: Fused, elementwise: Elementwise) -> FusionAnalysis:
    """HloFusionAnalysis::Create for a fusion instruction."""
    return _Analyzer(fused, elementwise).analyze(fusion)


class _Analyzer:
    def __init__(self, fused: Fused, elementwise: Elementwise) -> None:
        self.fused = fused
        self.elementwise = elementwise

    def analyze(self, fusion: Instruction) -> FusionAnalysis:
        roots = tuple(self._roots(self.fused.root))
        heroes = tuple(self._hero(root) for root in roots)
        emitter = self._emitter(fusion, roots, heroes)
        if emitter == "loop":
            heroes = roots
        reduction = None
        if emitter == "reduction":
            reduction = next(h for r, h in zip(roots, heroes, strict=True) if self._real(r, h))
        return FusionAnalysis(emitter, roots, heroes, reduction)

    def _roots(self, instruction: Instruction) -> list[Instruction]:
        if instruction.opcode != "tuple":
            return [instruction]
        found = []
        for name in instruction.operands:
            operand = self.fused.by_name.get(name)
            if operand is not None:
                found.extend(self._roots(operand))
        return found

    def _operand_shape(self, instruction: Instruction) -> Shape:
        operand = self.fused.operand(instruction, 0)
        return operand.shape if operand is not None else instruction.shape

    def _real(self, root: Instruction, hero: Instruction) -> bool:
        return is_real_reduction_hero(root, hero, self._operand_shape)

    def _emitter(self, fusion: Instruction, roots: tuple[Instruction, ...],
                 heroes: tuple[Instruction, ...]) -> str:
        """GetEmitterFusionKind."""
        named = _NAMED_EMITTERS.get(_backend_kind(fusion))
        if named:
            return named
        pairs = list(zip(roots, heroes, strict=True))
        first = next((h for r, h in pairs if self._real(r, h)), None)
        if first is not None and self._reductions_fit(pairs, first):
            return "reduction"
        transposes = [h for h in heroes if self._is_transpose_hero(h)]
        if transposes and all(_same_transpose(t, transposes[0]) for t in transposes):
            return "transpose"
        if len(roots) > 1:
            return "loop"
        return {"scatter": "scatter", "sort": "sort"}.get(roots[0].opcode, "loop")

    def _reductions_fit(self, pairs: list[tuple[Instruction, Instruction]],
                        first: Instruction) -> bool:
        """Every other root is a real reduction of the same kind as the first, or has as many
        elements as the first one's operand."""
        operand = self._operand_shape(first)
        kind = _reduction_kind(first, operand)
        for root, hero in pairs:
            if root is first:
                continue
            if self._real(root, hero):
                if _reduction_kind(hero, self._operand_shape(hero)) != kind:
                    return False
            elif root.shape.element_count != operand.element_count:
                return False
        return True

    # --- heroes --------------------------------------------------------------------------------
    def _hero(self, root: Instruction) -> Instruction:
        """FindNonTrivialHero."""
        hero = root
        while self._intermediate(hero, 1):
            operand = self.fused.operand(hero, 0)
            if operand is None or operand.opcode == "parameter":
                break
            hero = operand
        for predicate in (self._is_transpose_hero, _is_concatenate):
            found = self._find_hero(hero, predicate)
            if found is not None:
                return found
        return hero if hero.opcode == "reduce" else root

    def _is_transpose_hero(self, instruction: Instruction) -> bool:
        return instruction.opcode == "transpose" and not _transpose_is_bitcast(
            instruction, self.fused.operand(instruction, 0))

    def _find_hero(self, start: Instruction,
                   predicate: Callable[[Instruction], bool]) -> Instruction | None:
        """FindHero: the one instruction above `start`, through elementwise ops and bitcasts of
        up to three operands, that satisfies `predicate`, with only such ops below it."""
        hero: Instruction | None = None
        queue, seen = deque([start]), {start.name}
        while queue:
            node = queue.popleft()
            if predicate(node):
                if hero is not None:
                    return None
                hero = node
                continue
            if not self._intermediate(node, 3):
                continue
            for name in node.operands:
                operand = self.fused.by_name.get(name)
                if operand is not None and operand.opcode != "parameter" and name not in seen:
                    seen.add(name)
                    queue.append(operand)
        if hero is None or self._nontrivial_below(hero):
            return None
        return hero

    def _nontrivial_below(self, hero: Instruction) -> bool:
        stack, seen = list(self.fused.users.get(hero.name, ())), set()
        while stack:
            node = stack.pop()
            if node.name in seen:
                continue
            seen.add(node.name)
            if node.opcode not in ("tuple", "parameter") and not self._intermediate(node, 3):
                return True
            stack.extend(self.fused.users.get(node.name, ()))
        return False

    def _intermediate(self, instruction: Instruction, operands: int) -> bool:
        """IsIntermediate (xla/codegen/ir_emission_utils.cc)."""
        if not 1 <= len(instruction.operands) <= operands:
            return False
        opcode = instruction.opcode
        operand = self.fused.operand(instruction, 0)
        if opcode == "copy":
            return operand is not None and operand.shape == instruction.shape
        if self.elementwise(instruction) or opcode == "bitcast":
            return True
        if opcode == "reshape":
            return operand is not None and _reshape_is_bitcast(operand.shape, instruction.shape)
        if opcode == "transpose":
            return _transpose_is_bitcast(instruction, operand)
        return False


def _is_concatenate(instruction: Instruction) -> bool:
    return instruction.opcode == "concatenate"


def _same_transpose(a: Instruction, b: Instruction) -> bool:
    return a.shape == b.shape and a.dimensions == b.dimensions


def _backend_kind(fusion: Instruction) -> str:
    """The kind of the backend_config's fusion_backend_config ("" when none)."""
    if fusion.raw_attribute("backend_config") is None:
        return ""
    config = fusion.backend_config
    fusion_config = config.get("fusion_backend_config") if isinstance(config, dict) else None
    kind = fusion_config.get("kind") if isinstance(fusion_config, dict) else None
    return kind if isinstance(kind, str) else ""


def _transpose_is_bitcast(instruction: Instruction, operand: Instruction | None) -> bool:
    """ShapeUtil::TransposeIsBitcast: the permutation composed with the output's layout is the
    operand's layout."""
    if operand is None:
        return False
    permutation = instruction.dimensions or ()
    out_order = _minor_to_major(instruction.shape)
    return len(permutation) == len(out_order) and \
        tuple(permutation[d] for d in out_order) == _minor_to_major(operand.shape)


def _reshape_is_bitcast(operand: Shape, result: Shape) -> bool:
    """Sufficient for ShapeUtil::ReshapeIsBitcast: both layouts major-to-minor once size-1
    dimensions are dropped (the element order then is the logical one on both sides)."""
    return (operand.element_type == result.element_type
            and _row_major(operand) and _row_major(result))


def _row_major(shape: Shape) -> bool:
    order = [d for d in _minor_to_major(shape) if shape.dimensions[d] != 1]
    return order == sorted(order, reverse=True)


def _minor_to_major(shape: Shape) -> tuple[int, ...]:
    if shape.layout is not None and len(shape.layout.minor_to_major) == shape.rank:
        return shape.layout.minor_to_major
    return tuple(reversed(range(shape.rank)))


# --- reductions (xla/service/gpu/reduction_utils.cc) -------------------------------------------
ReductionKind = tuple[bool, tuple[int, int, int]]
"""(is a row reduction, the three contiguous components)."""


def is_real_reduction_hero(root: Instruction, hero: Instruction,
                           operand_of: Callable[[Instruction], Shape]) -> bool:
    """IsRealReductionHero."""
    if hero.opcode != "reduce":
        return False
    operand = operand_of(hero)
    if not _contiguous_reduction(hero, operand):
        return False
    return root is hero or _race_free(_reduction_kind(hero, operand))


def _contiguous_reduction(reduce: Instruction, operand: Shape) -> bool:
    """IsReductionFromOrToContiguousDimensions."""
    reduced = reduce.dimensions or ()
    kept = tuple(d for d in range(operand.rank) if d not in reduced)
    order = _minor_to_major(operand)
    return ((_consecutive(order, kept) or _consecutive(order, reduced))
            and _faster_than_elemental(_reduction_kind(reduce, operand)))


def _consecutive(order: tuple[int, ...], dims: tuple[int, ...]) -> bool:
    """LayoutUtil::AreDimensionsConsecutive."""
    positions = sorted(order.index(d) for d in dims)
    return all(b == a + 1 for a, b in zip(positions, positions[1:], strict=False))


def _partition(shape: Shape, middle: tuple[int, ...]) -> tuple[int, int, int]:
    """PartitionShapeByMiddleDimensions: (major, middle, minor) element counts."""
    values, segment = [1, 1, 1], 2
    for dim in _minor_to_major(shape):
        inside = dim in middle
        if segment == 2 and inside:
            segment = 1
        elif segment == 1 and not inside:
            segment = 0
        values[segment] *= shape.dimensions[dim]
    return values[0], values[1], values[2]


def _reduction_kind(reduce: Instruction, operand: Shape) -> ReductionKind:
    """GetReductionKindAndContiguousComponents."""
    reduced = reduce.dimensions or ()
    kept = tuple(d for d in range(operand.rank) if d not in reduced)
    if not kept:
        return True, (1, 1, operand.element_count)
    order = _minor_to_major(operand)
    if _consecutive(order, kept):
        major, middle, minor = _partition(operand, kept)
        if middle == 1:
            return True, (1, 1, major * minor)
        if minor == 1:
            return False, (1, major, middle)
        return True, (major, middle, minor)
    major, middle, minor = _partition(operand, reduced)
    if minor == 1:
        return True, (1, major, middle)
    return False, (major, middle, minor)


def _faster_than_elemental(kind: ReductionKind) -> bool:
    """IsUnnestedReductionFasterThanElemental."""
    row, (_, major, minor) = kind
    if row:
        return minor >= _WARP_SIZE or _WARP_SIZE % minor == 0
    return not (major < _WARP_SIZE or (major < 2 * _WARP_SIZE and minor < _WARP_SIZE)
                or (major < 4 * _WARP_SIZE and minor < 8)
                or (major < 8 * _WARP_SIZE and minor < 3))


def _race_free(kind: ReductionKind) -> bool:
    """ReductionIsRaceFree, with GetReductionTiling's tiles (row: 16 wide; column: 128 high)."""
    row, (batch, middle, minor) = kind
    if row:
        return minor <= _MIN_THREADS_X_ROW * 16 and batch <= _BATCHED_RACE_FREE_BOUND
    return middle <= _WARP_SIZE * 128
