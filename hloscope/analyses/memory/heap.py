"""The allocation estimated from the HLO text alone: a replay of XLA's buffer assignment.

XLA's BufferAssigner (xla/service/buffer_assignment.cc) turns the buffers of its alias analysis
into allocations; this module replays it on hloscope's liveness (`liveness/`), per memory space
(the layout's `S(n)`): own allocations for constants, arguments and outputs, then reuse of an
operand's or a donated argument's / output's allocation (largest first, `sharing.py`'s rules),
then the rest packed into one heap per space by best fit, the smaller of XLA's spatial and
temporal orders kept. Sizes are unpadded on CPU and GPU, tiled and rounded up to 512 bytes on
TPU; the heap's alignment is `ALIGNMENT`. On TPU the HBM heap is libtpu's (16 KiB packing, a
16 KiB slot per tuple table), so `SpaceAllocationEstimate.total_bytes` estimates the figure
libtpu compares with the usable HBM; memory_analysis() is not estimated, nor XLA:GPU's may-alias
fusion hints. The steps and their measured error: see docs/memory.md, 'The estimated allocation'.
"""
from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial

import numpy as np

from hloscope.analyses.memory.liveness import Liveness, placed
from hloscope.analyses.memory.liveness.program import control_flow_callees
from hloscope.analyses.memory.liveness.sharing import ShareRules, can_take_operand
from hloscope.analyses.memory.liveness.values import Value
from hloscope.calibration import cpu as cpu_calibration
from hloscope.calibration import gpu as gpu_calibration
from hloscope.calibration import tpu as tpu_calibration
from hloscope.configs.targets import parse_target
from hloscope.errors import UsageError
from hloscope.model.instruction import Instruction
from hloscope.model.shape import element_byte_width

# heap chunk alignment per backend (XLA: BufferAssigner's color_alignment; libtpu: its buffer
# granularity), and below libtpu's buffer sizes and HBM heap layout: each figure's source and
# test in hloscope/calibration, docs/calibration.md
ALIGNMENT = {"cpu": int(cpu_calibration.HEAP_ALIGNMENT.value),
             "gpu": int(gpu_calibration.HEAP_ALIGNMENT.value),
             "tpu": int(tpu_calibration.GRANULARITY.value)}
_DEFAULT_ALIGNMENT = 64

SizeOf = Callable[[Value], int]
TPU_GRANULARITY = int(tpu_calibration.GRANULARITY.value)  # libtpu sizes buffers in whole tiles


TPU_TUPLE_ELEMENT_BYTES = int(tpu_calibration.TUPLE_ELEMENT_BYTES.value)  # a tuple table's entry
# libtpu's HBM heap (color 0's preallocated-temp allocation): offsets at multiples of 16 KiB,
# each tuple-shaped value in a 16 KiB slot of its own for the whole program, the heap ending at
# the last slot's 512-byte table
TPU_HBM_ALIGNMENT = int(tpu_calibration.HBM_ALIGNMENT.value)
TPU_HBM_TUPLE_SLOT = int(tpu_calibration.HBM_TUPLE_SLOT.value)
# libtpu's HBM heap: packed in allocation order unless that exceeds its limit, the usable HBM
# less the space's other allocations and this reserve (docs/memory.md, "TPU: libtpu's two packings")
TPU_HBM_HEAP_RESERVE = int(tpu_calibration.HBM_HEAP_RESERVE.value)


TPU_UNTILED_ELEMENTS = int(tpu_calibration.UNTILED_TILE_ELEMENTS.value)


def tpu_generation(target: str | None) -> str | None:
    """The TPU generation of a target string (`v6e` of `tpu:v6e:2x2`); None for none or another
    backend's, or one that is no target."""
    try:
        parsed = parse_target(target) if target else None
    except UsageError:
        return None
    return parsed.device_name if parsed is not None and parsed.backend == "tpu" else None


def tuple_table_granule(generation: str | None) -> int:
    """The bytes a TPU tuple table's size is rounded up to on `generation` (`v6e`)."""
    figure = tpu_calibration.TUPLE_TABLE_GRANULE.get(generation or "")
    return TPU_GRANULARITY if figure is None else int(figure.value)


def _tpu_size(value: Value, table_granule: int = TPU_GRANULARITY) -> int:
    shape = value.shape
    if shape.is_tuple:  # an HBM table; one in the SparseCore's memory takes none
        return 0 if value.memory_space else _rounded(
            TPU_TUPLE_ELEMENT_BYTES * len(shape.tuple_shapes), table_granule)
    size = value.padded_bytes
    if shape.memory_space == 0 and shape.rank <= 1 and not (shape.layout and shape.layout.tiles):
        size = (_rounded(shape.element_count, TPU_UNTILED_ELEMENTS)
                * element_byte_width(shape.element_type))
    return _rounded(size, TPU_GRANULARITY)


def _rounded(size: int, granule: int) -> int:
    return -(-size // granule) * granule


@dataclass(frozen=True, slots=True)
class SpaceAllocationEstimate:
    """The estimated allocation of one memory space S(n), as memory_analysis() adds it up.

    `temp_bytes` is the heap's size; `reused_bytes` the temporaries (and outputs) placed in an
    argument's or an output's allocation instead (not counted again); constants are outside
    the allocation, as in memory_analysis()."""

    memory_space: int
    argument_bytes: int
    output_bytes: int
    alias_bytes: int
    temp_bytes: int
    constant_bytes: int
    reused_bytes: int

    @property
    def allocation_bytes(self) -> int:
        """arguments + temporaries + outputs - aliased (constants not counted)."""
        return self.argument_bytes + self.temp_bytes + self.output_bytes - self.alias_bytes

    @property
    def total_bytes(self) -> int:
        """Every allocation of the space, constants included: on TPU HBM the figure libtpu
        compares with the usable HBM (its RESOURCE_EXHAUSTED message's)."""
        return self.allocation_bytes + self.constant_bytes

    def to_dict(self) -> dict:
        data = asdict(self)
        data["allocation_bytes"] = self.allocation_bytes
        data["total_bytes"] = self.total_bytes
        return data


@dataclass(frozen=True, slots=True)
class AllocationEstimate:
    """XLA's allocation, estimated from the text: one entry per memory space present."""

    backend: str
    alignment: int
    spaces: tuple[SpaceAllocationEstimate, ...]

    def space(self, number: int) -> SpaceAllocationEstimate | None:
        return next((s for s in self.spaces if s.memory_space == number), None)

    def total(self, keep: Callable[[int], bool] = lambda _: True) -> int:
        return sum(s.allocation_bytes for s in self.spaces if keep(s.memory_space))

    def to_dict(self) -> dict:
        return {"backend": self.backend, "alignment": self.alignment,
                "spaces": [s.to_dict() for s in self.spaces]}


@dataclass(frozen=True, slots=True, eq=False)
class Placement:
    """Steps 1 and 2 replayed: `liveness` as the buffer assigner places it (`liveness.placed`:
    the heap's shares without the buffers placed before it, and the values it puts at one
    offset of an argument's or output's allocation where their ranges meet)."""

    liveness: Liveness
    backend: str
    assigner: _Assigner


def allocation_size(backend: str, generation: str | None = None) -> SizeOf:
    """The bytes XLA's buffer assignment gives a value on `backend` (see the module docstring);
    on TPU a tuple table's size depends on the `generation` (`v6e`; None: not known)."""
    if backend != "tpu":
        return _unpadded_size
    granule = tuple_table_granule(generation)
    return _tpu_size if granule == TPU_GRANULARITY else partial(_tpu_size, table_granule=granule)


def _unpadded_size(value: Value) -> int:
    return value.bytes


def place_buffers(liveness: Liveness, backend: str, generation: str | None = None) -> Placement:
    """Steps 1 and 2 on `liveness` (from analyze_liveness); the live peak is counted on the
    returned liveness, the estimate packs its heap. `generation`: allocation_size's."""
    assigner = _Assigner(liveness, allocation_size(backend, generation), backend)
    assigner.run()
    outside = frozenset(v.id for b in assigner.buffers if b.kind != _HEAP for v in b.values)
    settled = placed(liveness, outside, assigner.together(), backend)
    assigner.liveness = settled
    return Placement(settled, backend, assigner)


def estimate_allocation(liveness: Liveness, backend: str) -> AllocationEstimate:
    """XLA's buffer assignment replayed on `liveness` (see the module docstring)."""
    return estimate_placed(place_buffers(liveness, backend))


def estimate_placed(placement: Placement, hbm_bytes: int | None = None) -> AllocationEstimate:
    """Step 3 on a placement: the heap packed per memory space, and the allocation's parts.
    `hbm_bytes`, the usable HBM of the TPU target when known, sets libtpu's heap limit."""
    backend, liveness, assigner = placement.backend, placement.liveness, placement.assigner
    alignment = ALIGNMENT.get(backend, _DEFAULT_ALIGNMENT)
    size_of = assigner.size_of
    spaces = []
    for space in sorted({b.space for b in assigner.buffers}):
        heap_values = [v for b in assigner.buffers if b.space == space and b.kind == _HEAP
                       for v in b.values]
        if backend == "tpu" and space == 0:
            others = assigner.space_figures(space, 0).total_bytes
            limit = None if hbm_bytes is None else hbm_bytes - others - TPU_HBM_HEAP_RESERVE
            temp = tpu_hbm_temp_size(liveness, heap_values, assigner.buffer_of, limit)
        else:
            temp = heap_size(liveness, heap_values, assigner.buffer_of, alignment, size_of)
        spaces.append(assigner.space_figures(space, temp))
    return AllocationEstimate(backend, alignment, tuple(spaces))


# --- 1 and 2: the buffer assigner --------------------------------------------------------------
_CONSTANT, _ARGUMENT, _OUTPUT, _REUSED, _HEAP = "constant", "argument", "output", "reused", "heap"


@dataclass(slots=True, eq=False)
class _Buffer:
    """One buffer of XLA's alias analysis: values that share one address."""

    values: list[Value]
    size: int
    space: int
    live_out: bool
    order: int
    kind: str = _HEAP


@dataclass(slots=True, eq=False)
class _Allocation:
    size: int
    space: int
    live_out: bool
    readonly: bool
    buffers: list[_Buffer] = field(default_factory=list)
    spans: list[tuple[int, int, Value]] = field(default_factory=list)  # sorted by start


class _Assigner:
    def __init__(self, liveness: Liveness, size_of: SizeOf, backend: str = "") -> None:
        self.liveness = liveness
        self.size_of = size_of
        program = liveness.program
        self.entry, self.root = program.root, program.root.root
        self.buffers = self._buffers()
        self.buffer_of = {v.id: b for b in self.buffers for v in b.values}
        self.allocations: list[_Allocation] = []
        self.allocation_of: dict[int, _Allocation] = {}  # buffer id() -> allocation
        self.reusable: list[_Allocation] = []  # XLA's allocation_indices, in creation order
        self.rules = ShareRules(program.module, program.users, backend)
        self.backend = backend
        self._top_level: dict[Instruction, list[Value]] | None = None

    def _buffers(self) -> list[_Buffer]:
        liveness = self.liveness
        groups: dict[int, list[Value]] = defaultdict(list)
        for value in liveness.live_values():
            groups[liveness.buffers.find(value.id)].append(value)
        order = _post_order_positions(liveness)
        found = []
        for members in groups.values():
            live_out = any(p is self.root for v in members for p, _ in v.positions)
            found.append(_Buffer(members, max(self.size_of(v) for v in members),
                                 members[0].memory_space, live_out,
                                 min(order[v.instruction] for v in members)))
        # BufferAssigner's order: size (decreasing), live-out first, position in the program.
        found.sort(key=lambda b: (-b.size, not b.live_out, b.order))
        return found

    def run(self) -> None:
        for buffer in self.buffers:
            self._assign(buffer)

    def _assign(self, buffer: _Buffer) -> None:
        if any(v.instruction.opcode == "constant" for v in buffer.values):
            buffer.kind = _CONSTANT
            self._new(buffer, readonly=True)
            return
        parameter = self._entry_parameter(buffer)
        if parameter is not None:
            buffer.kind = _ARGUMENT
            aliased = buffer.live_out
            allocation = self._new(buffer, readonly=not aliased)
            if aliased:
                self.reusable.append(allocation)
            return
        tuple_shaped = any(v.shape.is_tuple for v in buffer.values)
        if not tuple_shaped and self._reuse(buffer):
            buffer.kind = _REUSED
            return
        if buffer.live_out:
            buffer.kind = _OUTPUT
            allocation = self._new(buffer, readonly=False)
            if not tuple_shaped:  # a tuple's allocation takes no other buffer (is_tuple)
                self.reusable.append(allocation)

    def together(self) -> list[tuple[int, int]]:
        """(earlier, later) values of different buffers in one allocation whose ranges meet:
        both at its offset 0 (MaybeAssignBuffer), so one piece of memory at that time."""
        pairs = []
        for allocation in self.allocations:
            spans = allocation.spans
            for first, (_, end, value) in enumerate(spans):
                for other_start, _, other in spans[first + 1:]:
                    if other_start > end:
                        break
                    if self.buffer_of[value.id] is self.buffer_of[other.id]:
                        continue
                    pairs.append((value.id, other.id) if other_start == end
                                 else (other.id, value.id))
        return pairs

    def _entry_parameter(self, buffer: _Buffer) -> Value | None:
        computation_of = self.liveness.program.computation_of
        return next((v for v in buffer.values if v.instruction.opcode == "parameter"
                     and computation_of[v.instruction] is self.entry), None)

    def _new(self, buffer: _Buffer, readonly: bool) -> _Allocation:
        allocation = _Allocation(buffer.size, buffer.space, buffer.live_out, readonly)
        self.allocations.append(allocation)
        self._add(allocation, buffer)
        return allocation

    def _add(self, allocation: _Allocation, buffer: _Buffer) -> None:
        ranges = self.liveness.ranges
        allocation.buffers.append(buffer)
        allocation.live_out |= buffer.live_out
        for value in buffer.values:
            start, end = ranges[value.id]
            allocation.spans.insert(bisect_left(allocation.spans, (start, -1)),
                                    (start, end, value))
        self.allocation_of[id(buffer)] = allocation

    def _reuse(self, buffer: _Buffer) -> bool:
        """Try the operands' allocations, then the reusable ones from the smallest."""
        candidates: list[_Allocation] = []
        for value in buffer.values:
            if value.index or value.shape.is_tuple:
                continue
            for operand in self.liveness.program.operands.get(value.instruction, ()):
                for position_value in self._values_at(operand):
                    allocation = self.allocation_of.get(id(self.buffer_of[position_value.id]))
                    if allocation is not None and allocation not in candidates:
                        candidates.append(allocation)
        candidates += [a for a in reversed(self.reusable) if a not in candidates]
        for allocation in candidates:
            if self._fits(allocation, buffer):
                self._add(allocation, buffer)
                return True
        return False

    def _values_at(self, instruction: Instruction) -> list[Value]:
        """Values at the top-level position of `instruction` (its own or the one it forwards)."""
        if self._top_level is None:
            self._top_level = defaultdict(list)
            for value in self.liveness.live_values():
                for position, index in value.positions:
                    if not index:
                        self._top_level[position].append(value)
        return self._top_level.get(instruction, [])

    def _fits(self, allocation: _Allocation, buffer: _Buffer) -> bool:
        """MaybeAssignBuffer."""
        if allocation.space != buffer.space or buffer.size > allocation.size \
                or allocation.readonly:
            return False
        if buffer.live_out and allocation.size != buffer.size:
            return False
        if self.backend == "tpu" and allocation.live_out and any(
                v.instruction.opcode == "all-gather" for v in buffer.values):
            return False  # libtpu's must_not_live_out (docs/memory.md, step 2)
        ranges = self.liveness.ranges
        for value in buffer.values:
            start, end = ranges[value.id]
            for other_start, other_end, other in allocation.spans:
                if other_start > end:
                    break
                if other_end < start:
                    continue
                if not self._touch_and_share(value, (start, end), other,
                                             (other_start, other_end)):
                    return False
                if value.instruction.opcode == "copy" and any(
                        p in self.liveness.program.operands.get(value.instruction, ())
                        for p, _ in other.positions):
                    return False
        return True

    def _touch_and_share(self, value: Value, span: tuple[int, int], other: Value,
                         other_span: tuple[int, int]) -> bool:
        """LiveRangeInterferes is false: the ranges meet at one time, where the later value may
        take the earlier one's buffer (judged at the earlier one's end position)."""
        if other_span[1] == span[0]:
            return can_take_operand(self.liveness.program, self.rules, other, value)
        if span[1] == other_span[0]:
            return can_take_operand(self.liveness.program, self.rules, value, other)
        return False

    def space_figures(self, space: int, temp: int) -> SpaceAllocationEstimate:
        chosen = [a for a in self.allocations if a.space == space]
        arguments = [a for a in chosen if any(b.kind == _ARGUMENT for b in a.buffers)]
        constants = [a for a in chosen if any(b.kind == _CONSTANT for b in a.buffers)]
        outputs = [a for a in chosen if a.live_out and a not in constants]
        aliased = [a for a in arguments if a.live_out]
        reused = sum(b.size for a in chosen for b in a.buffers if b.kind == _REUSED)
        return SpaceAllocationEstimate(
            memory_space=space, argument_bytes=sum(a.size for a in arguments),
            output_bytes=sum(a.size for a in outputs), alias_bytes=sum(a.size for a in aliased),
            temp_bytes=temp, constant_bytes=sum(a.size for a in constants),
            reused_bytes=reused)


def _post_order_positions(liveness: Liveness) -> dict:
    """An instruction's place in BufferAssigner's tie-break order (AssignBuffersForComputations):
    the computations in reverse post order of the call graph (callers first; a while's body is
    visited before its condition, so the condition comes first), and within each
    HloComputation::MakeInstructionPostOrder: from each instruction without users, in text
    order, a depth-first walk that emits an instruction after its operands (first operand
    first) and its control predecessors."""
    program = liveness.program
    positions: dict[Instruction, int] = {}
    for computation in _reverse_post_order(program):
        for instruction in _instruction_post_order(computation):
            positions[instruction] = len(positions)
    for instruction in program.sequence:  # anything the walks missed keeps its schedule order
        positions.setdefault(instruction, len(positions))
    return positions


def _reverse_post_order(program) -> list:
    module, order, seen = program.module, [], set()

    def visit(computation) -> None:
        seen.add(computation.name)
        for instruction in computation.instructions:
            callees = control_flow_callees(instruction)
            if instruction.opcode == "while":
                callees = tuple(reversed(callees))  # XLA numbers the body 0, the condition 1
            for name in callees:
                if name.lstrip("%") not in seen:
                    visit(module.computation(name))
        order.append(computation)
    visit(program.root)
    return order[::-1]


def _instruction_post_order(computation) -> list[Instruction]:
    by_name = {i.name: i for i in computation.instructions}
    used = {name for i in computation.instructions for name in i.operands}
    order: list[Instruction] = []
    state: dict[str, bool] = {}  # False: visiting, True: visited
    for start in computation.instructions:
        if start.name in used:
            continue
        stack = [start]
        while stack:
            current = stack[-1]
            if current.name in state:
                stack.pop()
                if not state[current.name]:
                    state[current.name] = True
                    order.append(current)
                continue
            state[current.name] = False
            for name in (*reversed(current.operands), *current.control_predecessors):
                found = by_name.get(name.lstrip("%"))
                if found is not None and not state.get(found.name, False):
                    stack.append(found)
    return order


# --- 3: the heap simulator ---------------------------------------------------------------------
@dataclass(slots=True)
class _Interval:
    """A placed buffer of the heap: its own event times and its colocations'."""

    value: Value
    size: int
    start: int
    end: int = -1
    colocations: list[_Interval] = field(default_factory=list)
    placed: bool = True


def heap_size(liveness: Liveness, values: list[Value], buffer_of: dict, alignment: int,
              size_of: SizeOf, allocation_order: bool = False) -> int:
    """The size of the temporary allocation XLA's heap simulator builds for `values`: the smaller
    of its spatial and temporal packings (ChooseBestHeapAlgorithm), or with `allocation_order`
    the one best fit in the order of the allocation events (libtpu's first packing of its HBM
    heap)."""
    if not values:
        return 0
    intervals = _replay(liveness, values, buffer_of)
    sizes = {id(i): buffer_of[i.value.id].size for i in intervals}
    for interval in intervals:
        interval.size = sizes[id(interval)]
    placed = [i for i in intervals if i.placed and i.size > 0]
    if allocation_order:  # each interval's start is its Alloc event's time, unique
        return _pack(sorted(placed, key=lambda i: i.start), alignment)
    spatial = sorted(placed, key=lambda i: (-i.size, i.start - _span(i)[1], i.value.id))
    temporal = sorted(placed, key=lambda i: (_span(i)[0] - _span(i)[1], -i.size, i.value.id))
    return min(_pack(spatial, alignment), _pack(temporal, alignment))


def tpu_hbm_temp_size(liveness: Liveness, values: list[Value], buffer_of: dict,
                      heap_limit: int | None = None) -> int:
    """The HBM temporaries of libtpu's buffer assignment: the arrays packed at 16 KiB alignment
    by best fit in the order of their allocation events (libtpu's primary packing), or, where
    that heap exceeds `heap_limit`, as XLA's heap simulator does (its fallback), then one 16 KiB
    slot per tuple-shaped buffer, the last one ending at its 512 bytes."""
    def is_table(value: Value) -> bool:
        return any(v.shape.is_tuple for v in buffer_of[value.id].values)
    arrays = [v for v in values if not is_table(v)]
    tuples = {id(buffer_of[v.id]) for v in values if is_table(v)}
    packed = heap_size(liveness, arrays, buffer_of, TPU_HBM_ALIGNMENT, _tpu_size,
                       allocation_order=True)
    if heap_limit is not None and packed > heap_limit:
        packed = heap_size(liveness, arrays, buffer_of, TPU_HBM_ALIGNMENT, _tpu_size)
    if not tuples:
        return packed
    return packed + TPU_HBM_TUPLE_SLOT * (len(tuples) - 1) + TPU_GRANULARITY


def tpu_hbm_heaps(placement: Placement) -> tuple[int, int]:
    """The arrays of libtpu's HBM heap packed both ways: (its first packing, in allocation order;
    its fallback, XLA's), the sizes its log states ('Primary algorithm finished with size')."""
    assigner = placement.assigner
    values = [v for b in assigner.buffers if b.space == 0 and b.kind == _HEAP for v in b.values]
    arrays = [v for v in values
              if not any(w.shape.is_tuple for w in assigner.buffer_of[v.id].values)]
    first, fallback = (heap_size(placement.liveness, arrays, assigner.buffer_of,
                                 TPU_HBM_ALIGNMENT, _tpu_size, allocation_order=order)
                       for order in (True, False))
    return first, fallback


def _replay(liveness: Liveness, values: list[Value], buffer_of: dict) -> list[_Interval]:
    """HeapSimulator::RunComputation: Alloc / ShareWith / Free events in time order."""
    ranges = liveness.ranges
    chosen = {v.id for v in values}
    takes = {output: operand for operand, output in liveness.shares
             if operand in chosen and output in chosen}
    ordered = sorted(values, key=lambda v: (*ranges[v.id], v.id))
    defined: dict[int, list[Value]] = defaultdict(list)
    freed: dict[int, list[Value]] = defaultdict(list)
    for value in ordered:
        defined[ranges[value.id][0]].append(value)
        freed[ranges[value.id][1]].append(value)
    clock = 0
    intervals: dict[int, _Interval] = {}
    first_in_buffer: dict[int, _Interval] = {}
    by_id = {v.id: v for v in values}
    for time in sorted(set(defined) | set(freed)):
        to_free = freed.get(time, [])
        for value in defined.get(time, ()):
            buffer = id(buffer_of[value.id])
            interval = _Interval(value, 0, clock)
            operand = takes.get(value.id)
            if buffer in first_in_buffer:
                interval.placed = False
                first_in_buffer[buffer].colocations.append(interval)
            elif operand is not None and by_id[operand] in to_free:
                intervals[operand].end = clock
                clock += 1
                to_free.remove(by_id[operand])
                interval.start = clock
                interval.placed = False
                intervals[operand].colocations.append(interval)
                first_in_buffer[buffer] = interval
            else:
                first_in_buffer[buffer] = interval
            intervals[value.id] = interval
            clock += 1
        for value in to_free:
            intervals[value.id].end = clock
            clock += 1
    return list(intervals.values())


def _colocated(interval: _Interval) -> list[_Interval]:
    found, stack = [], list(interval.colocations)
    while stack:
        item = stack.pop()
        found.append(item)
        stack.extend(item.colocations)
    return found


def _span(interval: _Interval) -> tuple[int, int]:
    members = [interval, *_colocated(interval)]
    return min(m.start for m in members), max(m.end for m in members)


def _pack(order: list[_Interval], alignment: int) -> int:
    """GlobalDecreasingSizeBestFitHeap::Finish for one order; returns the heap size."""
    capacity = 2 * sum(len(_colocated(i)) + 1 for i in order) + 1
    starts = np.empty(capacity, dtype=np.int64)
    ends = np.empty(capacity, dtype=np.int64)
    offsets = np.empty(capacity, dtype=np.int64)
    sizes = np.empty(capacity, dtype=np.int64)
    count, heap = 0, 0
    for interval in order:
        members = [interval, *_colocated(interval)]
        size = max(m.size for m in members)
        used = np.zeros(count, dtype=bool)
        for member in members:
            used |= (starts[:count] <= member.end) & (ends[:count] >= member.start)
        offset = _best_fit(offsets[:count][used], sizes[:count][used], size, alignment)
        heap = max(heap, offset + size)
        for member in members:
            starts[count], ends[count] = member.start, member.end
            offsets[count], sizes[count] = offset, size
            count += 1
    return heap


def _best_fit(offsets: np.ndarray, sizes: np.ndarray, size: int, alignment: int) -> int:
    """The offset FindUnslicedChunkCandidates picks among the free gaps left by the used chunks."""
    if not len(offsets):
        return 0
    order = np.argsort(offsets, kind="stable")
    gaps: list[tuple[int, int]] = []
    free_start = 0
    current_offset, current_end = int(offsets[order[0]]), int(offsets[order[0]] + sizes[order[0]])
    for k in order[1:]:
        offset, end = int(offsets[k]), int(offsets[k] + sizes[k])
        if offset < current_end:
            current_end = max(current_end, end)
            continue
        if current_offset - free_start >= size:
            gaps.append((free_start, current_offset))
        free_start = max(free_start, _aligned(current_end, alignment))
        current_offset, current_end = offset, end
    if current_offset - free_start >= size:
        gaps.append((free_start, current_offset))
    tail = max(free_start, _aligned(current_end, alignment))
    best, best_size = -1, 0
    for start, end in gaps:
        aligned = _aligned(start, alignment)
        if end - size < aligned:
            continue
        if best < 0 or end - start < best_size:
            best, best_size = aligned, end - start
    return best if best >= 0 else _aligned(tail, alignment)


def _aligned(offset: int, alignment: int) -> int:
    return -(-offset // alignment) * alignment
