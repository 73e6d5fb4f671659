"""XLA's own account of a program's memory, as read from its dumps and protos.

Plain frozen data, filled by `hloscope.parsers.xla_memory`: the buffer assignment (allocations
and the logical values placed in them), the live-range dump (schedule, live intervals, the peak
and its stack-trace tree), the memory-usage report, the heap-simulator traces of an HloProto and
the figures derived from them (allocation per memory space, heap replay, live profiles).

Two figures must never be confused. The *live peak* sums the logical values live at one program
point (`LiveRangeDump.peak_bytes`, `LiveProfile.peak_bytes`); the *allocation* is what the buffer
assignment reserves, packing and fragmentation included (`SpaceAllocation.allocated_bytes`:
arguments + temporaries + outputs - aliased). Colors are XLA memory spaces (`S(n)` in layouts);
what each means on a backend is in `hloscope.devices.MEMORY_SPACES`.

Every class has `to_dict()`, whose keys are the JSON form (bytes are integers).
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

ShapeIndex = tuple[int, ...]

PARAMETER = "parameter"
OUTPUT = "output"
THREAD_LOCAL = "thread-local"
CONSTANT = "constant"
TEMPORARY = "temporary"

ALLOC = "ALLOC"
FREE = "FREE"
SHARE_WITH = "SHARE_WITH"

_HUMAN_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
                "PiB": 1 << 50, "EiB": 1 << 60}
_HUMAN = re.compile(r"^(-?[\d.]+)(B|KiB|MiB|GiB|TiB|PiB|EiB)$")


def value_key(instruction: str, shape_index: ShapeIndex) -> str:
    """`name{0,1}`: how the live-range dump names a value (`name{}` at the top level)."""
    return f"{instruction}{{{','.join(map(str, shape_index))}}}"


def human_bytes(text: str) -> int:
    """Bytes from XLA's HumanReadableNumBytes text (`512B`, `768.0KiB`, `1.00MiB`), rounded as
    printed: exact below 1 KiB, otherwise within half a unit of the last printed digit."""
    match = _HUMAN.match(text.strip())
    if not match:
        raise ValueError(f"not a byte size: {text!r}")
    return round(float(match.group(1)) * _HUMAN_UNITS[match.group(2)])


def _plain(value: Any) -> Any:
    if isinstance(value, _Data):
        return value.to_dict()
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    return value


class _Data:
    """`to_dict()` for the dataclasses below: every field, then the `_derived` properties."""

    __slots__ = ()
    _derived: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: _plain(getattr(self, f.name)) for f in fields(self)}  # type: ignore
        data.update((name, _plain(getattr(self, name))) for name in self._derived)
        return data


# --- buffer assignment -------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class AssignedValue(_Data):
    """One logical value (HloValue) placed in an allocation at `offset`, taking `size` bytes.

    `color` is the `@n` of the value (None when XLA did not print one); `shape` is printed with
    its layout (empty when read from a proto without the module). `instruction_id` is the
    HloInstructionProto id, known only for values read from a proto."""

    _derived: ClassVar[tuple[str, ...]] = ("key",)

    id: int
    instruction: str
    shape_index: ShapeIndex
    offset: int
    size: int
    shape: str = ""
    color: int | None = None
    is_phi: bool = False
    instruction_id: int | None = None

    @property
    def key(self) -> str:
        return value_key(self.instruction, self.shape_index)


@dataclass(frozen=True, slots=True)
class BufferAllocation(_Data):
    """A BufferAllocation: one contiguous region XLA reserves, and the values it holds.

    `parameter_number`/`parameter_shape_index` are set for entry-computation parameters;
    `output_shape` for the allocation of the entry root (`output shape is |...|`). `is_tuple` and
    `parameter_aliased_with_output` exist only in protos (None from text). `page` is the
    `page N` jax 0.11's buffer assignments write after the size (0 on every allocation of an H100
    dump, fixtures/gpu-h100-jax011; None before); no figure uses it. `other_flags` keeps
    flags of the header this reader does not know, verbatim; `line` is where the text put it."""

    _derived: ClassVar[tuple[str, ...]] = ("category", "is_entry_computation_parameter",
                                           "is_aliased_parameter")

    index: int
    size: int
    color: int = 0
    parameter_number: int | None = None
    parameter_shape_index: ShapeIndex | None = None
    parameter_shape: str | None = None
    output_shape: str | None = None
    is_constant: bool = False
    is_thread_local: bool = False
    maybe_live_out: bool = False
    is_preallocated_temp: bool = False
    is_tuple: bool | None = None
    parameter_aliased_with_output: bool | None = None
    values: tuple[AssignedValue, ...] = ()
    other_flags: tuple[str, ...] = ()
    page: int | None = None
    line: int | None = None

    @property
    def is_entry_computation_parameter(self) -> bool:
        return self.parameter_number is not None

    @property
    def is_aliased_parameter(self) -> bool:
        """A parameter whose buffer is also an output (donated, input_output_alias).

        Protos say so (`is_parameter_aliased_with_output`); the text does not, and there a
        parameter allocation that may live out is one: XLA copies a parameter it returns unless
        the two alias (matches memory_analysis' alias bytes on every fixture)."""
        if not self.is_entry_computation_parameter:
            return False
        if self.parameter_aliased_with_output is not None:
            return self.parameter_aliased_with_output
        return self.maybe_live_out

    @property
    def category(self) -> str:
        """XProf's grouping: parameter, output, thread-local, constant or temporary."""
        if self.is_entry_computation_parameter:
            return PARAMETER
        if self.maybe_live_out:
            return OUTPUT
        if self.is_thread_local:
            return THREAD_LOCAL
        return CONSTANT if self.is_constant else TEMPORARY


@dataclass(frozen=True, slots=True)
class ValueUse(_Data):
    """A use of a value: operand `operand_number` (at `operand_index`) of `instruction`."""

    instruction: str
    operand_number: int
    operand_index: ShapeIndex = ()


@dataclass(frozen=True, slots=True)
class ValueDetail(_Data):
    """A value of `Used values:` (the values dump): positions, uses, defining instruction."""

    _derived: ClassVar[tuple[str, ...]] = ("key",)

    id: int
    instruction: str
    shape_index: ShapeIndex
    positions: tuple[tuple[str, ShapeIndex], ...]
    uses: tuple[ValueUse, ...]
    definition: str
    color: int | None = None
    is_phi: bool = False

    @property
    def key(self) -> str:
        return value_key(self.instruction, self.shape_index)


@dataclass(frozen=True, slots=True)
class HeapEvent(_Data):
    """One heap-simulator event: ALLOC, FREE or SHARE_WITH (`share_with` the canonical id)."""

    kind: str
    buffer_id: int
    computation: str = ""
    instruction: str = ""
    share_with: int | None = None


@dataclass(frozen=True, slots=True)
class HeapTrace(_Data):
    """A HeapSimulatorTrace. `allocation_index` is what XLA recorded, which XProf does not trust
    (it names pre-combination indices on TPU); `hloscope` finds the allocation from the events."""

    events: tuple[HeapEvent, ...]
    whole_module: bool = False
    allocation_index: int | None = None


@dataclass(frozen=True, slots=True)
class BufferAssignment(_Data):
    """All allocations of one program, in index order, plus what else the source carried.

    From text: `total_bytes_used` and `value_details` when the `Used values` part was read (the
    `-buffer-assignment-values.txt` dump, or the tail of older single-file dumps). From a proto:
    `heap_traces`, `peak_buffers` (allocation index -> ids XLA lists at its heap peak) and
    `logical_buffer_sizes` (id -> LogicalBufferProto.size)."""

    _derived: ClassVar[tuple[str, ...]] = ("total_bytes",)

    allocations: tuple[BufferAllocation, ...]
    source: str = "<text>"
    total_bytes_used: int | None = None
    value_details: tuple[ValueDetail, ...] = ()
    heap_traces: tuple[HeapTrace, ...] = ()
    peak_buffers: tuple[tuple[int, tuple[int, ...]], ...] = ()
    logical_buffer_sizes: tuple[tuple[int, int], ...] = ()

    @property
    def total_bytes(self) -> int:
        return sum(allocation.size for allocation in self.allocations)

    @property
    def colors(self) -> tuple[int, ...]:
        return tuple(sorted({allocation.color for allocation in self.allocations}))

    def allocation(self, index: int) -> BufferAllocation:
        for allocation in self.allocations:
            if allocation.index == index:
                return allocation
        raise KeyError(f"no allocation {index}")

    def values(self) -> Iterator[tuple[BufferAllocation, AssignedValue]]:
        for allocation in self.allocations:
            for value in allocation.values:
                yield allocation, value

    def by_key(self) -> dict[str, tuple[BufferAllocation, AssignedValue]]:
        """`name{index}` -> (allocation, value); build it once, it walks every value."""
        return {value.key: (allocation, value) for allocation, value in self.values()}

    def by_id(self) -> dict[int, tuple[BufferAllocation, AssignedValue]]:
        return {value.id: (allocation, value) for allocation, value in self.values()}


# --- live range --------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class LiveInterval(_Data):
    """A value live from schedule position `start` to `end`, both inclusive (HloLiveRange)."""

    _derived: ClassVar[tuple[str, ...]] = ("key",)

    instruction: str
    shape_index: ShapeIndex
    start: int
    end: int

    @property
    def key(self) -> str:
        return value_key(self.instruction, self.shape_index)


@dataclass(frozen=True, slots=True)
class PeakValue(_Data):
    """A value live at the peak, its logical (unpadded) bytes and XLA's running total.

    `shape_index` is None for dumps of XLA versions that printed no index."""

    _derived: ClassVar[tuple[str, ...]] = ("key",)

    instruction: str
    shape_index: ShapeIndex | None
    bytes: int
    cumulative_bytes: int

    @property
    def key(self) -> str:
        return self.instruction if self.shape_index is None else \
            value_key(self.instruction, self.shape_index)


@dataclass(frozen=True, slots=True)
class StackNode(_Data):
    """A node of `Stack trace breakdown for peak usage`: a computation, an op_name component or
    an instruction. `current_bytes` are values ending exactly here, `total_bytes` include the
    children; `remaining_bytes` is XLA's running remainder in print order."""

    name: str
    percent: float
    total_bytes: int
    current_bytes: int
    remaining_bytes: int
    children: tuple[StackNode, ...] = ()
    line: int = 0

    def walk(self, depth: int = 0) -> Iterator[tuple[int, StackNode]]:
        """(depth, node) for this node and its descendants, in print order."""
        yield depth, self
        for child in self.children:
            yield from child.walk(depth + 1)


@dataclass(frozen=True, slots=True)
class LiveRangeDump(_Data):
    """XLA's `*-live-range.txt` (HloLiveRange::ToString).

    `schedule_end` is the `max N` of the header; `sequence[i]` the instruction at position i of
    the flattened schedule; `peak_time` the position of the peak (None when XLA could not tell:
    unbounded dynamic shapes); `stack_total_bytes` the tree's header figure, which equals
    `peak_bytes` (both sum the same values)."""

    _derived: ClassVar[tuple[str, ...]] = ("peak_bytes", "peak_instruction")

    schedule_end: int
    sequence: tuple[str, ...]
    intervals: tuple[LiveInterval, ...]
    peak_time: int | None = None
    peak_values: tuple[PeakValue, ...] = ()
    stack_total_bytes: int | None = None
    stack: tuple[StackNode, ...] = ()
    source: str = "<text>"

    @property
    def peak_bytes(self) -> int:
        return sum(value.bytes for value in self.peak_values)

    @property
    def peak_instruction(self) -> str | None:
        if self.peak_time is None or not 0 <= self.peak_time < len(self.sequence):
            return None
        return self.sequence[self.peak_time]

    def by_key(self) -> dict[str, LiveInterval]:
        return {interval.key: interval for interval in self.intervals}


# --- memory-usage report -----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class UsageRow(_Data):
    """One offset of an allocation's table: the values placed there, grouped by shape.

    `offset` and `value_count` are exact; sizes are XLA's human-readable text (`size_bytes` and
    `cumulative_bytes` convert them, rounded as printed). `cumulative_percent` is None where XLA
    printed `nan` (a table whose values all have size 0)."""

    _derived: ClassVar[tuple[str, ...]] = ("size_bytes", "cumulative_bytes")

    cumulative_text: str
    cumulative_percent: int | None
    size_text: str
    offset: int
    value_count: int
    shapes: tuple[tuple[int, str], ...]

    @property
    def size_bytes(self) -> int:
        return human_bytes(self.size_text)

    @property
    def cumulative_bytes(self) -> int:
        return human_bytes(self.cumulative_text)


@dataclass(frozen=True, slots=True)
class UsageTable(_Data):
    """The table of one allocation. XLA prints no allocation index; `allocation_index` is set by
    `label_tables` (tables follow the space's allocations by size, then index).
    `hidden_offsets` counts the offsets of `The rest N values ... not shown`."""

    rows: tuple[UsageRow, ...]
    hidden_offsets: int = 0
    allocation_index: int | None = None
    line: int = 0


@dataclass(frozen=True, slots=True)
class MemorySpaceUsage(_Data):
    """`Memory Space: NAME (color=N)` with its `Total bytes` (the sum of its allocations)."""

    name: str
    color: int
    total_bytes: int
    tables: tuple[UsageTable, ...] = ()


@dataclass(frozen=True, slots=True)
class MemoryUsageReport(_Data):
    """XLA's `*-memory-usage-report.txt`: every memory space in color order."""

    spaces: tuple[MemorySpaceUsage, ...]
    source: str = "<text>"

    def space(self, color: int) -> MemorySpaceUsage | None:
        return next((space for space in self.spaces if space.color == color), None)


# --- derived figures ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SpaceAllocation(_Data):
    """What the buffer assignment reserves in one memory space (color), by kind.

    An allocation counts in every kind it has: a donated parameter is an argument, an output and
    aliased, so `allocated_bytes` (arguments + temporaries + outputs - aliased) counts it once.
    Constants and thread-local allocations are not in `allocated_bytes` (memory_analysis leaves
    them out too); `total_bytes` is every allocation (the usage report's `Total bytes`)."""

    _derived: ClassVar[tuple[str, ...]] = ("allocated_bytes",)

    color: int
    argument_bytes: int = 0
    output_bytes: int = 0
    alias_bytes: int = 0
    temp_bytes: int = 0
    constant_bytes: int = 0
    thread_local_bytes: int = 0
    total_bytes: int = 0
    allocation_count: int = 0

    @property
    def allocated_bytes(self) -> int:
        return self.argument_bytes + self.temp_bytes + self.output_bytes - self.alias_bytes


@dataclass(frozen=True, slots=True)
class MemoryAnalysisFigures(_Data):
    """The figures of JAX's `compiled.memory_analysis()` as XLA's PjRt computes them from a
    buffer assignment (device vs pinned host memory, `S(5)`)."""

    _derived: ClassVar[tuple[str, ...]] = ("allocated_bytes", "host_allocated_bytes")

    argument_bytes: int = 0
    output_bytes: int = 0
    alias_bytes: int = 0
    temp_bytes: int = 0
    host_argument_bytes: int = 0
    host_output_bytes: int = 0
    host_alias_bytes: int = 0
    host_temp_bytes: int = 0
    colors: tuple[int, ...] = ()

    @property
    def allocated_bytes(self) -> int:
        return self.argument_bytes + self.temp_bytes + self.output_bytes - self.alias_bytes

    @property
    def host_allocated_bytes(self) -> int:
        return (self.host_argument_bytes + self.host_temp_bytes + self.host_output_bytes
                - self.host_alias_bytes)


@dataclass(frozen=True, slots=True)
class LiveProfile(_Data):
    """Bytes live over the schedule, rebuilt from the text dumps (live-range intervals, sizes and
    offsets from the buffer assignment); values sharing an offset of one allocation count once.

    `timeline[t]` is the live bytes at schedule position t; `peak_values` the keys live at the
    peak. `allocation_index` is None for a profile of a whole memory space."""

    color: int
    peak_bytes: int
    peak_time: int
    timeline: tuple[int, ...]
    peak_values: tuple[str, ...] = ()
    allocation_index: int | None = None
    missing_values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class HeapReplay(_Data):
    """A heap-simulator trace replayed the way XProf's memory viewer does, for one color.

    `heap_peak_bytes` is the simulated heap's peak (temporaries); `indefinite_bytes` the
    allocations live for the whole program (parameters, outputs, constants, thread-local), which
    XProf adds to every point, so `peak_bytes` is XProf's "peak heap". `timeline[i]` is the heap
    size before event i (plus the final size); `live_at_peak` the canonical buffer ids live at the
    peak, in allocation order."""

    _derived: ClassVar[tuple[str, ...]] = ("peak_bytes",)

    color: int
    trace_index: int | None
    allocation_index: int | None
    heap_peak_bytes: int
    indefinite_bytes: int
    peak_event: int = 0
    peak_instruction: str = ""
    live_at_peak: tuple[int, ...] = ()
    timeline: tuple[int, ...] = ()
    instructions: tuple[str, ...] = field(default=())

    @property
    def peak_bytes(self) -> int:
        return self.heap_peak_bytes + self.indefinite_bytes


# --- protos ------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ProtoInstruction(_Data):
    """What the buffer readers need of an HloInstructionProto (shape printed with layout)."""

    id: int
    name: str
    opcode: str
    shape: str
    computation: str
    op_name: str = ""


@dataclass(frozen=True, slots=True)
class ProtoModule(_Data):
    """An HloModuleProto reduced to its instructions (by id) and entry aliases.

    `aliased_parameters` are the (parameter number, shape index) pairs of input_output_alias."""

    name: str
    id: int
    entry_computation: str
    instructions: tuple[ProtoInstruction, ...] = ()
    aliased_parameters: tuple[tuple[int, ShapeIndex], ...] = ()

    def by_id(self) -> dict[int, ProtoInstruction]:
        return {instruction.id: instruction for instruction in self.instructions}


@dataclass(frozen=True, slots=True)
class HloProtoData(_Data):
    """An HloProto (`*.hlo.pb` dump, or the one a profile's metadata plane embeds)."""

    module: ProtoModule | None
    assignment: BufferAssignment | None
    source: str = "<bytes>"

