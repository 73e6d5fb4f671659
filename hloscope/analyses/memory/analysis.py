"""`memory`: the live peak of a scheduled module, the buffers live at it, and a timeline.

Two figures are never confused:

- the **live peak** (this analysis, from the HLO text alone): the most bytes of buffers live at
  once, with XLA's live ranges (`liveness/`) and unpadded sizes (ShapeUtil::ByteSizeOf; a tuple
  is its pointer table), an output made in the buffer of an operand that dies there counted
  once with it (`liveness/sharing.py`). `peak_bytes` counts the memory spaces that live in
  device memory; every space also has its own peak, and `padded_peak_bytes` rounds tiled shapes
  up; `unshared_peak_bytes` is the device peak without that sharing (each buffer of XLA's alias
  analysis on its own). `xla_moment_time` / `xla_moment_bytes` reproduce what XLA's live-range
  dump (`*-live-range.txt`) reports as its peak; XLA's choice of moment is not the maximum of
  anything that memory holds (`liveness/peak.py`), so they can be on either side of
  `peak_bytes`.
- the **allocation**: what XLA's buffer assignment reserves (arguments + temporaries + outputs
  - aliased, with packing and fragmentation), which decides an OOM. XLA's own data gives it:
  pass it in `xla` (`xla_figures` of a `Program`: its dump folder's buffer assignment and
  live-range files). From the text alone it is estimated (`estimated_allocation_bytes`,
  `heap.py`: XLA's buffer assigner and heap simulator replayed on the same live ranges), per
  memory space.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

from hloscope.analyses.arguments import pytree_path
from hloscope.analyses.cost.attribution import split
from hloscope.analyses.cost.phases import DEFAULT_SCOPE_DEPTH, layer_number, scope_path
from hloscope.analyses.memory.heap import (
    AllocationEstimate,
    Placement,
    estimate_placed,
    place_buffers,
    tpu_generation,
)
from hloscope.analyses.memory.layer_span import LayerSpan, deferred_bytes, layer_span
from hloscope.analyses.memory.layers import LOOP_BODY, ScannedLayers
from hloscope.analyses.memory.liveness import analyze_liveness
from hloscope.analyses.memory.liveness.categories import CATEGORY_ORDER, Classifier, path_components
from hloscope.analyses.memory.liveness.peak import (
    added,
    live_at,
    peak_time,
    space_timelines,
    xla_moment,
)
from hloscope.analyses.memory.liveness.spaces import is_device_space, space_info
from hloscope.analyses.memory.liveness.timeline import Step, timeline
from hloscope.analyses.memory.liveness.values import Value
from hloscope.analyses.memory.story import MemoryStory, SpaceFigures, StoryInputs, memory_story
from hloscope.analyses.memory.working_set import LayerWorkingSet, layer_working_set
from hloscope.analyses.memory.xla import ALLOCATION_PARTS, XlaFigures
from hloscope.dataframes import DataFrames
from hloscope.gc_pause import paused_gc
from hloscope.loader.backend import detect_backend
from hloscope.model.instruction import Instruction
from hloscope.model.module import HloModule

if TYPE_CHECKING:
    from hloscope.loader.program import Program

GROUPINGS = ("category", "scope", "layer", "phase")
NO_LAYER = "(no layer)"
BASIS = ("live peak from the HLO text (buffers live at once, an output made in a dying "
         "operand's buffer counted once with it; not XLA's allocation)")


@dataclass(frozen=True, slots=True)
class BufferRow:
    """One logical buffer live at the peak."""

    name: str
    instruction: str
    index: str
    shape: str
    bytes: int
    padded_bytes: int
    memory_space: int
    category: str
    phase: str
    op_name: str
    source: str
    scope: str
    layer: str | None
    start: int
    end: int
    layers: tuple[str, ...] = ()  # a stacked [L, ...] buffer: the layers of its equal shares
    argument: str = ""  # an argument's pytree path (`params['layers']['w1']`)
    sharding: str = ""  # an argument's sharding as the module states it

    def to_dict(self) -> dict:
        data = asdict(self)
        data["layers"] = list(self.layers)
        return data


@dataclass(frozen=True, slots=True)
class SpacePeak:
    """The live peak of one memory space `S(n)`."""

    memory_space: int
    name: str
    location: str
    peak_bytes: int
    padded_peak_bytes: int
    peak_time: int
    peak_instruction: str
    estimated_allocation_bytes: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class TimelineStep:
    """Live device bytes while one top-level instruction runs (a loop: its inner peak too)."""

    step: int
    time: int
    instruction: str
    opcode: str
    phase: str
    live_bytes: int
    inner_peak_bytes: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Group:
    key: str
    bytes: int
    padded_bytes: int
    buffers: int

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(slots=True)
class MemoryResult(DataFrames):
    module_name: str
    source: str
    backend: str
    peak_bytes: int
    padded_peak_bytes: int
    peak_time: int
    peak_instruction: str
    peak_op_name: str
    peak_phase: str
    xla_moment_time: int
    xla_moment_bytes: int
    all_spaces_peak_bytes: int
    unshared_peak_bytes: int
    buffer_count: int
    live_at_peak: list[BufferRow]
    spaces: list[SpacePeak]
    timeline: list[TimelineStep]
    scope_depth: int = DEFAULT_SCOPE_DEPTH
    scope_prefix: str = ""
    xla: XlaFigures | None = None
    basis: str = BASIS
    layer_working_set: LayerWorkingSet | None = None  # with `stacked_layers` (memory())
    allocation_estimate: AllocationEstimate | None = None
    layer_span: LayerSpan | None = None  # the entry's layer loops, first to last (memory())

    @property
    def estimated_allocation_bytes(self) -> int | None:
        """XLA's allocation estimated from the text: the device memory spaces' sum."""
        estimate = self.allocation_estimate
        if estimate is None:
            return None
        return estimate.total(lambda space: is_device_space(self.backend, space))

    @property
    def story(self) -> MemoryStory:
        """Each figure per memory space (live peak, estimated allocation, XLA's allocation,
        memory_analysis()) and every difference between device figures with its reason."""
        spaces = [SpaceFigures(s.memory_space, s.name, s.location, s.peak_bytes,
                               s.estimated_allocation_bytes) for s in self.spaces]
        return memory_story(StoryInputs(self.backend, spaces, self.peak_bytes,
                                        self.estimated_allocation_bytes, self.xla_moment_bytes,
                                        self.xla))

    def groups(self, by: str) -> list[Group]:
        """The live set at the peak grouped by category, scope, layer or phase, largest first."""
        if by not in GROUPINGS:
            raise ValueError(f"unknown grouping {by!r}; choose one of {', '.join(GROUPINGS)}")
        totals: dict[str, list[int]] = {}
        for row in self.live_at_peak:
            for key, size, padded in _group_shares(row, by):
                entry = totals.setdefault(key, [0, 0, 0])
                entry[0] += size
                entry[1] += padded
                entry[2] += 1
        groups = [Group(key, *values) for key, values in totals.items()]
        if by == "category":
            order = {c.value: n for n, c in enumerate(CATEGORY_ORDER)}
            return sorted(groups, key=lambda g: (order.get(g.key, len(order)), g.key))
        if by == "layer":
            return sorted(groups, key=lambda g: (layer_number(g.key) < 0, layer_number(g.key),
                                                 -g.bytes, g.key))
        return sorted(groups, key=lambda g: (-g.bytes, g.key))

    @property
    def by_category(self) -> dict[str, int]:
        return {g.key: g.bytes for g in self.groups("category")}

    def to_dict(self) -> dict:
        data = {
            "module_name": self.module_name, "source": self.source, "backend": self.backend,
            "basis": self.basis, "peak_bytes": self.peak_bytes,
            "padded_peak_bytes": self.padded_peak_bytes, "peak_time": self.peak_time,
            "peak_instruction": self.peak_instruction, "peak_op_name": self.peak_op_name,
            "peak_phase": self.peak_phase, "xla_moment_time": self.xla_moment_time,
            "xla_moment_bytes": self.xla_moment_bytes,
            "all_spaces_peak_bytes": self.all_spaces_peak_bytes,
            "unshared_peak_bytes": self.unshared_peak_bytes,
            "estimated_allocation_bytes": self.estimated_allocation_bytes,
            "estimated_allocation": None if self.allocation_estimate is None else
            self.allocation_estimate.to_dict(),
            "buffer_count": self.buffer_count, "scope_depth": self.scope_depth,
            "scope_prefix": self.scope_prefix,
            "by_category": self.by_category,
            "groups": {by: [g.to_dict() for g in self.groups(by)] for by in GROUPINGS},
            "spaces": [s.to_dict() for s in self.spaces],
            "live_at_peak": [row.to_dict() for row in self.live_at_peak],
            "timeline": [step.to_dict() for step in self.timeline],
            "layer_working_set": None if self.layer_working_set is None
            else self.layer_working_set.to_dict(),
            "layer_span": None if self.layer_span is None else self.layer_span.to_dict(),
            "story": self.story.to_dict(),
        }
        if self.xla is not None:
            data["xla"] = self.xla.to_dict()
            data["allocation_bytes"] = self.xla.allocation_bytes
            data["xla_peak_bytes"] = self.xla.live_peak_bytes
            data["memory_analysis_bytes"] = self.xla.memory_analysis_bytes
        return data


def _group_key(row: BufferRow, by: str) -> str:
    if by == "layer":
        return row.layer or NO_LAYER
    return getattr(row, by)


def _group_shares(row: BufferRow, by: str) -> list[tuple[str, int, int]]:
    """(group, bytes, padded bytes) of a row: a stacked buffer grouped by layer is split into
    equal shares, one per layer it holds (largest remainders, adding up exactly)."""
    if by != "layer" or not row.layers:
        return [(_group_key(row, by), row.bytes, row.padded_bytes)]
    ones = [1] * len(row.layers)
    return list(zip(row.layers, split(row.bytes, ones), split(row.padded_bytes, ones),
                    strict=True))


def memory(module: HloModule, backend: str | None = None, xla: XlaFigures | None = None,
           scope_depth: int = DEFAULT_SCOPE_DEPTH, root: str | None = None,
           stacked_layers: int | None = None, generation: str | None = None,
           hbm_bytes: int | None = None) -> MemoryResult:
    """The live peak of `module` (scheduled; NotScheduledError otherwise) and its buffers;
    `root` analyses another top-level computation than the entry as a program;
    `stacked_layers` (the layer scan's length) adds one layer's backward working set;
    `generation` (`v6e`, when the target is known) sizes TPU tuple tables as it does;
    `hbm_bytes`, the usable HBM (by default the generation's), sets libtpu's heap limit."""
    with paused_gc():
        backend = backend or detect_backend(module)
        placement = place_buffers(analyze_liveness(module, root), backend, generation)
        liveness = placement.liveness
        builder = _Builder(module, placement, backend, scope_depth)
        result = builder.result(xla, hbm_bytes or usable_hbm_bytes(generation))
        span = layer_span(result.timeline, result.peak_bytes, module) if root is None else None
        if span is not None:
            result.layer_span = replace(
                span, deferred_bytes=deferred_bytes(liveness, span, builder.on_device))
        if stacked_layers:
            result.layer_working_set = layer_working_set(
                liveness, builder.classifier, builder.on_device, stacked_layers)
        return result


def usable_hbm_bytes(generation: str | None) -> int | None:
    """The HBM a program may use on a TPU `generation` (`v5e`); None when it is not known."""
    from hloscope.devices import get_device
    from hloscope.errors import UsageError

    if generation is None:
        return None
    try:
        return get_device(generation).usable_memory_bytes
    except UsageError:
        return None


def program_memory(program: Program, backend: str | None = None,
                   scope_depth: int = DEFAULT_SCOPE_DEPTH,
                   target: str | None = None) -> MemoryResult:
    """`memory` of a loaded program, with XLA's own figures when its dump is beside it: what
    `hloscope memory` shows and `hloscope.memory` returns. `target` (`tpu:v4:2x2x1`) stands
    for the program's own where a bare dump folder names none."""
    backend = backend or program.backend
    return memory(program.module, backend=backend, xla=xla_figures(program, backend),
                  scope_depth=scope_depth, generation=tpu_generation(target or program.target))


def xla_figures(program: Program, backend: str) -> XlaFigures | None:
    """XLA's live-range peak and allocation for the program, from the dumps beside its module;
    None when there are none (HLO text alone)."""
    from hloscope.parsers.xla_memory import memory_analysis_figures, space_allocations

    live_range, assignment = program.live_range, program.buffer_assignment
    if live_range is None and assignment is None:
        return None
    artifacts = program.xla_memory
    sources = tuple(str(p) for p in (artifacts.live_range, artifacts.buffer_assignment) if p)
    record, note = _memory_analysis(program)
    figures = XlaFigures(sources=sources, memory_analysis=record, memory_analysis_note=note)
    if live_range is not None and live_range.peak_time is not None:
        figures = replace(figures, live_peak_bytes=live_range.peak_bytes,
                          live_peak_time=live_range.peak_time)
    if assignment is not None:
        device = memory_analysis_figures(assignment, backend)
        figures = replace(
            figures, allocation_bytes=device.allocated_bytes,
            allocation_by_space={s.color: s.allocated_bytes
                                 for s in space_allocations(assignment)},
            allocation_parts={part: getattr(device, part) for part in ALLOCATION_PARTS})
    return figures


def _memory_analysis(program: Program) -> tuple[dict[str, int | None] | None, str]:
    """memory_analysis() of the program as its build recorded it (allocated bytes included)
    and where from; else None and why there is none."""
    if program.build is None:
        return None, ("not recorded in a plain dump folder (a `hloscope build` folder records "
                      "it in its manifest)")
    record = program.compile_record
    if record is None:
        return None, "not recorded for this module (the build's record is of its main module)"
    if record.memory is None:
        return None, (f"none: the compile ended {record.status!r}, and a failed compile "
                      "reports none")
    memory = record.memory
    return ({**asdict(memory), "allocated_bytes": memory.allocated_bytes},
            f"recorded by the build ({program.build.folder})")


def live_peak_bytes(module: HloModule) -> tuple[int | None, str]:
    """(device live peak, "") for a scheduled module; (None, the reason) otherwise — for
    commands that show memory as one column among others (inspect, compare)."""
    if not module.is_scheduled:
        return None, "n/a: module not scheduled (pass the after-optimizations dump)"
    with paused_gc():
        backend = detect_backend(module)
        liveness = place_buffers(analyze_liveness(module), backend).liveness
        timelines = space_timelines(liveness)
        device = [t for n, t in timelines.items() if is_device_space(backend, n)]
        return max(added(device, liveness.program.end_time + 1), default=0), ""


class _Builder:
    def __init__(self, module: HloModule, placement: Placement, backend: str,
                 scope_depth: int) -> None:
        self.module = module
        self.placement = placement
        self.liveness = liveness = placement.liveness
        self.backend = backend
        self.scope_depth = scope_depth
        self.classifier = Classifier(liveness)
        self.scanned = ScannedLayers(liveness)
        self.scope_prefix = _common_prefix(scope_path(n) for n in self.classifier.op_names.values()
                                           if n)

    def on_device(self, value: Value) -> bool:
        return is_device_space(self.backend, value.memory_space)

    def result(self, xla: XlaFigures | None, hbm_bytes: int | None = None) -> MemoryResult:
        liveness, program = self.liveness, self.liveness.program
        length = program.end_time + 1
        timelines = space_timelines(liveness)
        live = added((t for n, t in timelines.items() if is_device_space(self.backend, n)),
                     length)
        moment = peak_time(live)
        peak_values = live_at(liveness, moment, keep=self.on_device)
        instruction = program.sequence[moment] if moment < len(program.sequence) else None
        xla_time = xla_moment(liveness)
        estimate = estimate_placed(self.placement, hbm_bytes)
        return MemoryResult(
            module_name=self.module.name, source=self.module.source, backend=self.backend,
            peak_bytes=sum(v.bytes for v in peak_values),
            padded_peak_bytes=sum(v.padded_bytes for v in peak_values),
            peak_time=moment,
            peak_instruction=instruction.name if instruction else "(program end)",
            peak_op_name=self.classifier.op_name(instruction) if instruction else "",
            peak_phase=self.classifier.phase(instruction).value if instruction else "",
            xla_moment_time=xla_time,
            xla_moment_bytes=sum(v.bytes for v in live_at(liveness, xla_time, per_buffer=False)),
            all_spaces_peak_bytes=max(added(timelines.values(), length), default=0),
            unshared_peak_bytes=self._device_peak(space_timelines(liveness, shared=False)),
            buffer_count=len(liveness.ranges),
            live_at_peak=sorted((self.row(v) for v in peak_values),
                                key=lambda r: (-r.bytes, r.name)),
            spaces=[self._space(n, t, estimate) for n, t in timelines.items()],
            timeline=self.timeline(live), scope_depth=self.scope_depth,
            scope_prefix="/".join(self.scope_prefix), xla=xla, allocation_estimate=estimate)

    def _device_peak(self, timelines: dict[int, list[int]]) -> int:
        device = (t for n, t in timelines.items() if is_device_space(self.backend, n))
        return max(added(device, self.liveness.program.end_time + 1), default=0)

    def row(self, value: Value) -> BufferRow:
        instruction = value.instruction
        file_name, line = source_location(self.module, self.classifier.namer(instruction))
        start, end = self.liveness.ranges[value.id]
        return BufferRow(
            name=value.name, instruction=instruction.name,
            index="{" + ",".join(map(str, value.index)) + "}", shape=str(value.shape),
            bytes=value.bytes, padded_bytes=value.padded_bytes,
            memory_space=value.memory_space, category=self.classifier.category(value).value,
            phase=self.classifier.phase(instruction).value,
            op_name=self.classifier.op_name(instruction),
            source=f"{file_name}:{line}" if file_name else "", scope=self.scope(value),
            layer=self.layer(value), start=start, end=end, layers=self.scanned.keys(value),
            **self.argument(value))

    def layer(self, value: Value) -> str | None:
        """The layer the op_name or path names; else a stacked buffer's layer range; else the
        layer loop's current layer for a buffer made in its body (memory/layers.py)."""
        named = self.classifier.layer(value)
        if named is not None:
            return named
        keys = self.scanned.keys(value)
        if keys:
            return f"{keys[0]}..{keys[-1]}" if len(keys) > 1 else keys[0]
        return LOOP_BODY if self.scanned.in_loop_body(value) else None

    def argument(self, value: Value) -> dict[str, str]:
        """The pytree path and sharding of the argument whose buffer `value` shares."""
        parameter = self.classifier.argument(value)
        if parameter is None:
            return {}
        return {"argument": pytree_path(parameter) or "", "sharding": parameter.sharding or ""}

    def scope(self, value: Value) -> str:
        argument = self.classifier.argument(value)
        if argument is not None:
            return "/".join(path_components(self.classifier.argument_path(argument))
                            [:self.scope_depth])
        path = scope_path(self.classifier.op_name(value.instruction))
        if path[:len(self.scope_prefix)] == self.scope_prefix and len(path) > len(
                self.scope_prefix):
            path = path[len(self.scope_prefix):]
        return "/".join(path[:self.scope_depth])

    def _space(self, number: int, live: list[int], estimate: AllocationEstimate) -> SpacePeak:
        moment = peak_time(live)
        values = live_at(self.liveness, moment, keep=lambda v: v.memory_space == number)
        info = space_info(self.backend, number)
        sequence = self.liveness.program.sequence
        estimated = estimate.space(number)
        return SpacePeak(
            memory_space=number, name=info.name, location=info.location.value,
            peak_bytes=live[moment], padded_peak_bytes=sum(v.padded_bytes for v in values),
            peak_time=moment,
            peak_instruction=sequence[moment].name if moment < len(sequence) else "",
            estimated_allocation_bytes=None if estimated is None else estimated.allocation_bytes)

    def timeline(self, live: list[int]) -> list[TimelineStep]:
        return [self._step(step) for step in timeline(self.liveness.program, live)]

    def _step(self, step: Step) -> TimelineStep:
        return TimelineStep(step=step.step, time=step.time, instruction=step.instruction.name,
                            opcode=step.instruction.opcode,
                            phase=self.classifier.phase(step.instruction).value,
                            live_bytes=step.live_bytes, inner_peak_bytes=step.inner_peak_bytes)


_SOURCE_FILE = re.compile(r'\bsource_file="([^"\\]*)"')
_SOURCE_LINE = re.compile(r"\bsource_line=(\d+)")
_STACK_FRAME = re.compile(r"\bstack_frame_id=(\d+)")


def source_location(module: HloModule, instruction: Instruction) -> tuple[str, int]:
    """module.source_location(instruction), read with three searches instead of a full parse of
    the instruction's attributes (it runs for every buffer shown)."""
    text = instruction.text
    if "metadata=" not in text:
        return "", 0
    source_file = _SOURCE_FILE.search(text, instruction.operands_end)
    if source_file is not None:
        line = _SOURCE_LINE.search(text, instruction.operands_end)
        return source_file.group(1), int(line.group(1)) if line else 0
    frame_id = _STACK_FRAME.search(text, instruction.operands_end)
    frame = module.stack_frames.frame(int(frame_id.group(1))) if frame_id else None
    return (frame.file_name, frame.line) if frame else ("", 0)


def _common_prefix(paths: Iterable[tuple[str, ...]]) -> tuple[str, ...]:
    """The scope components every op shares (typically the jitted function's name)."""
    prefix: tuple[str, ...] | None = None
    for path in paths:
        if prefix is None:
            prefix = path
        while prefix and path[:len(prefix)] != prefix:
            prefix = prefix[:-1]
        if not prefix:
            break
    return prefix or ()
