"""A profiler trace as hloscope keeps it: the executed HLO ops, step marks and embedded HLO.

Both readers (`hloscope.parsers.trace`: XSpace `*.xplane.pb` and the trace JSON) produce this
model. Times are integer picoseconds on the trace's own clock (the XLine timestamp plus the
event offset, which is also the trace JSON's `ts`), so events of one trace compare directly.

An `OpEvent` is one execution of one HLO instruction as the profiler recorded it: on CPU a
thunk on some thread (a `while` event encloses the events of its body), on TPU/GPU an event
on the device plane's "XLA Ops" line (a fusion can be several kernels, i.e. several events),
or on a raw GPU trace one kernel, memcpy or memset of a CUDA stream line. A kernel that ran
inside a CUDA graph (an XLA command buffer) names its command buffer in `command_buffer`: its
`name` is then the kernel's, which a library kernel (cuBLAS) shares with no instruction.
`program_id` is XLA's module id (the dump file's NNNN); the trace JSON does not carry it (None).
`run_id` names one execution of a program: the events of one step share it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

PS_PER_US = 1_000_000


@dataclass(frozen=True, slots=True)
class OpEvent:
    """One recorded execution of HLO instruction `name` of module `module`."""

    name: str
    module: str
    program_id: int | None
    run_id: int | None
    start_ps: int
    duration_ps: int
    plane: str
    line: str
    command_buffer: str = ""
    category: str = ""  # the writer's `hlo_category` stat (libtpu), as xprof groups ops

    @property
    def end_ps(self) -> int:
        return self.start_ps + self.duration_ps


@dataclass(frozen=True, slots=True)
class StepMark:
    """A training step the trace marks: a "Steps" line event or a StepTraceAnnotation."""

    number: int
    start_ps: int
    duration_ps: int
    source: str  # e.g. "/device:TPU:0 Steps" or "/host:CPU python (step_num)"


@dataclass(frozen=True, slots=True)
class MemoryState:
    """One allocator's state after one allocation or deallocation (the memory events)."""

    allocator: str
    time_ps: int
    in_use_bytes: int  # stack reserved + heap allocated


@dataclass(frozen=True, slots=True)
class MemoryPeak:
    """The peak of one device allocator as the profiler's memory events give it (xprof's
    memory_profile `peakBytesInUse`): stack reserved + heap allocated, at its largest."""

    allocator: str  # the events' `index_on_host` (libtpu) or `allocator_name` (TensorFlow)
    peak_in_use_bytes: int
    time_ps: int


@dataclass(frozen=True, slots=True)
class EmbeddedModule:
    """An HloProto the trace's `/host:metadata` plane carries for one program."""

    program_id: int
    name: str
    hlo_proto: bytes


@dataclass(slots=True)
class Trace:
    """Everything hloscope reads from one trace file."""

    source: str
    kind: str  # "xplane" or "trace-json"
    planes: list[str] = field(default_factory=list)
    events: list[OpEvent] = field(default_factory=list)
    steps: list[StepMark] = field(default_factory=list)
    modules: list[EmbeddedModule] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    device_names: list[str] = field(default_factory=list)  # a GPU plane's `gpu_device_name`
    # In-flight spans of asynchronous ops ("Async XLA Ops": a copy-start to its copy-done);
    # not op time (the ops' own events are on "XLA Ops"), kept for what overlaps them.
    async_events: list[OpEvent] = field(default_factory=list)
    memory_peaks: list[MemoryPeak] = field(default_factory=list)
    memory_states: list[MemoryState] = field(default_factory=list)
    frameworks: list[str] = field(default_factory=list)  # what wrote it, when not XLA

    @property
    def device_planes(self) -> list[str]:
        return [plane for plane in self.planes if plane.startswith("/device:")]
