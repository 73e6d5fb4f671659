"""Joining measured op events to HLO instructions, and their self time.

**Join.** An event names its instruction (`hlo_op`) and program (`program_id`, else the module
name): `(program, instruction name)` finds the instruction and the computation it is in.
Instruction names are unique in a module, so the join is exact. A raw GPU trace names a kernel
instead (see `parsers.trace.xplane`): XLA names a fusion's kernel after its instruction with
'.' and '-' made '_', so a name that is no instruction's joins the one instruction whose
sanitized name it is — not when several instructions sanitize to it. An event that finds
nothing (another program, HLO that does not match the trace, a library kernel inside a CUDA
graph) is kept as unmatched, its time counted (`unjoined_reason` says why).

**Self time.** A `while`, `call` or `conditional` event encloses the events of the computations
it runs (on CPU its thunk runs the body's thunks, possibly on other threads). Its self time is
its duration minus the time covered by the union of its children: events of the same program
and run, in a computation it calls, that start inside it. Other events' self time is their
duration. Summed self time is what the device spent in ops; it can exceed the wall time, as
ops run on several threads at once. On a device plane's line (TPU and GPU "XLA Ops") events
run one at a time and a `while` encloses its body's events on the same line: there, as xprof
counts it, an event's self time is its duration less its directly nested events' (found by
time alone, so it holds for events no HLO joins too).

**Executions.** How many times one run of the program executes an instruction: 1 in the entry
computation, times the trip count inside a loop body (trip count + 1 in its condition), nested
loops multiplied — what the trace must show per step.
"""
from __future__ import annotations

import bisect
import re
from collections import defaultdict
from dataclasses import dataclass, field

from hloscope.analyses.cost import CostAnalysis
from hloscope.model.instruction import Instruction
from hloscope.model.module import HloModule
from hloscope.model.opcodes import SYNC_CALLERS
from hloscope.model.trace import OpEvent
from hloscope.parsers.trace.device_ops import OPS_LINE
from hloscope.parsers.trace.programs import ProgramIndex, TraceProgram


@dataclass(slots=True)
class JoinedEvent:
    event: OpEvent
    program: TraceProgram | None
    computation: str = ""
    instruction: Instruction | None = None
    self_ps: int = 0

    @property
    def matched_instruction(self) -> Instruction:
        """The instruction of an event of `Join.matched`, which the time split, the op rows and
        the exports take (an unmatched event has none: a ValueError)."""
        if self.instruction is None:
            raise ValueError(f"the event {self.event.name!r} names no instruction of the HLO")
        return self.instruction


IN_COMMAND_BUFFERS = "library kernels inside CUDA graphs (command buffers)"
NAMES_NO_INSTRUCTION = "events whose names the HLO given does not have"
_UNSANITARY = re.compile(r"[.-]")


@dataclass(slots=True)
class Join:
    events: list[JoinedEvent] = field(default_factory=list)

    @property
    def matched(self) -> list[JoinedEvent]:
        return [e for e in self.events if e.instruction is not None]

    @property
    def unmatched(self) -> list[JoinedEvent]:
        return [e for e in self.events if e.instruction is None]


def join_events(events: list[OpEvent], index: ProgramIndex) -> Join:
    """Each event with its program and instruction, and its self time."""
    lookups: dict[int, InstructionNames] = {}
    joined = Join()
    for event in events:
        program = index.match(event)
        found = None
        if program is not None:
            table = lookups.get(id(program))
            if table is None:
                table = lookups[id(program)] = InstructionNames.of(program.module)
            found = table.find(event.name)
        computation, instruction = found if found else ("", None)
        joined.events.append(JoinedEvent(event, program, computation, instruction,
                                         event.duration_ps))
    _nested_self_times([j for j in joined.events if on_device_line(j.event)])
    _apply_self_times([j for j in joined.matched if not on_device_line(j.event)])
    return joined


def on_device_line(event: OpEvent) -> bool:
    """Whether the event is on a device plane's "XLA Ops" line (not a raw GPU stream line:
    kernels there are timed whole)."""
    return event.plane.startswith("/device:") and event.line == OPS_LINE


def _nested_self_times(events: list[JoinedEvent]) -> None:
    """Each event's self time less its direct children's on the same line (see the module
    docstring)."""
    by_line: dict[tuple[str, str], list[JoinedEvent]] = defaultdict(list)
    for joined in events:
        by_line[(joined.event.plane, joined.event.line)].append(joined)
    for group in by_line.values():
        group.sort(key=lambda j: (j.event.start_ps, -j.event.duration_ps))
        open_events: list[JoinedEvent] = []
        for joined in group:
            event = joined.event
            while open_events and open_events[-1].event.end_ps <= event.start_ps:
                open_events.pop()
            if open_events:
                parent = open_events[-1]
                inside = min(event.end_ps, parent.event.end_ps) - event.start_ps
                parent.self_ps = max(parent.self_ps - inside, 0)
            open_events.append(joined)


def kernel_name(instruction_name: str) -> str:
    """The name XLA gives the GPU kernel of an instruction: '.' and '-' made '_'."""
    return _UNSANITARY.sub("_", instruction_name)


@dataclass(frozen=True, slots=True)
class InstructionNames:
    """A module's instructions by name, and by kernel name where that names only one."""

    exact: dict[str, tuple[str, Instruction]]
    by_kernel: dict[str, tuple[str, Instruction]]

    @classmethod
    def of(cls, module: HloModule) -> InstructionNames:
        exact = {i.name: (c.name, i) for c, i in module.instructions()}
        candidates: dict[str, list[tuple[str, Instruction]]] = defaultdict(list)
        for name, found in exact.items():
            candidates[kernel_name(name)].append(found)
        unique = {kernel: found[0] for kernel, found in candidates.items() if len(found) == 1}
        return cls(exact, unique)

    def find(self, name: str) -> tuple[str, Instruction] | None:
        return self.exact.get(name) or self.by_kernel.get(name)


def unjoined_reason(joined: JoinedEvent) -> str:
    """Why an unmatched event names no instruction, in a few words."""
    return IN_COMMAND_BUFFERS if joined.event.command_buffer else NAMES_NO_INSTRUCTION


def _apply_self_times(events: list[JoinedEvent]) -> None:
    """Subtracts from each enclosing event the union of its children's intervals."""
    by_place: dict[tuple[int, int | None, str], list[JoinedEvent]] = defaultdict(list)
    for joined in events:
        by_place[(id(joined.program), joined.event.run_id, joined.computation)].append(joined)
    starts = {}
    for key, group in by_place.items():
        group.sort(key=lambda j: j.event.start_ps)
        starts[key] = [j.event.start_ps for j in group]
    for parent in events:
        if parent.instruction is None or parent.instruction.opcode not in SYNC_CALLERS:
            continue
        intervals = []
        for callee in parent.instruction.called_computations:
            key = (id(parent.program), parent.event.run_id, callee)
            intervals.extend(_inside(parent.event, by_place.get(key, []), starts.get(key, [])))
        parent.self_ps = max(parent.event.duration_ps - union_length(intervals), 0)


def _inside(parent: OpEvent, group: list[JoinedEvent],
            starts: list[int]) -> list[tuple[int, int]]:
    first = bisect.bisect_left(starts, parent.start_ps)
    last = bisect.bisect_right(starts, parent.end_ps)
    return [(j.event.start_ps, min(j.event.end_ps, parent.end_ps)) for j in group[first:last]
            if j.event is not parent]


def union_length(intervals: list[tuple[int, int]]) -> int:
    """Total length covered by `intervals` ([start, end) pairs), overlaps counted once."""
    covered, reach = 0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            covered += end - start
            reach = end
        elif end > reach:
            covered += end - reach
            reach = end
    return covered


def executions_per_run(analysis: CostAnalysis) -> dict[str, int]:
    """Instruction name -> times one run executes it (non-fused computations only)."""
    module = analysis.module
    counts: dict[str, int] = {}

    def visit(computation: str, times: int) -> None:
        for instruction in module.computation(computation).instructions:
            counts[instruction.name] = counts.get(instruction.name, 0) + times
            for callee, factor in _callees(analysis, computation, instruction):
                visit(callee, times * factor)

    visit(module.entry_name, 1)
    return counts


def _callees(analysis: CostAnalysis, computation: str,
             instruction: Instruction) -> list[tuple[str, int]]:
    if instruction.opcode == "while":
        trip = analysis.trip_count(computation, instruction).count
        return [(instruction.required_called_computation("body"), trip),
                (instruction.required_called_computation("condition"), trip + 1)]
    if instruction.opcode in ("call", "conditional"):
        return [(name, 1) for name in instruction.called_computations]
    return []
