"""The memory timeline of a program: live bytes at each instruction of its top-level schedule.

A step is one instruction of the root computation; its bytes are those live while it runs (its
operands and its outputs included). A while, call or conditional is one step: the computations
it runs come just before it in the flattened schedule, and the highest live bytes among their
times is the step's inner peak.
"""
from __future__ import annotations

from dataclasses import dataclass

from hloscope.analyses.memory.liveness.program import FlatProgram, control_flow_callees
from hloscope.model.instruction import Instruction
from hloscope.model.opcodes import SCHEDULED_CALLERS


@dataclass(frozen=True, slots=True)
class Step:
    step: int
    time: int
    instruction: Instruction
    live_bytes: int
    inner_peak_bytes: int | None
    inner_peak_time: int | None


def timeline(program: FlatProgram, live: list[int]) -> list[Step]:
    """One step per root-computation instruction, from `live` (bytes at each logical time)."""
    steps = []
    for number, instruction in enumerate(program.root.instructions):
        time = program.time[instruction]
        inner = _inner_span(program, instruction)
        peak_time = None
        if inner is not None and inner[0] < inner[1]:
            window = live[inner[0]:inner[1]]
            peak_time = inner[0] + window.index(max(window))
        steps.append(Step(number, time, instruction, live[time],
                          live[peak_time] if peak_time is not None else None, peak_time))
    return steps


def _inner_span(program: FlatProgram, instruction: Instruction) -> tuple[int, int] | None:
    """[first, last) times of the computations a control-flow instruction runs (None if none)."""
    if instruction.opcode not in SCHEDULED_CALLERS:
        return None
    spans = [program.spans[name] for name in control_flow_callees(instruction)
             if name in program.spans]
    if not spans:
        return None
    return min(s.start for s in spans), max(s.end for s in spans)
