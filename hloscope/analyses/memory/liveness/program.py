"""The flattened schedule: one logical time per instruction, numbered as XLA's HloLiveRange does.

A scheduled module lists each computation's instructions in schedule order. XLA's live-range
analysis (xla/hlo/utils/hlo_live_range.cc, FlattenSchedule) numbers them in one sequence starting
from the entry: before a `call`, `conditional` or `async-start` it numbers the called
computations (each branch in turn), before a `while` its condition and then its body, recursively,
and each computation only the first time it is reached. A computation therefore occupies a
contiguous span of times, and a control-flow instruction comes right after the spans of the
computations it runs. Computations run by other ops (fusions, reduce's `to_apply`, sort
comparators, ...) are not numbered: their values never exist as buffers of their own.

Instructions of a computation reached through an `async-start` (and of what it calls) are in that
start's *async context*: their buffers stay live until its `async-done`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from hloscope.model import attributes as attr
from hloscope.model.instruction import Instruction
from hloscope.model.module import Computation, HloModule
from hloscope.model.opcodes import SCHEDULED_CALLERS

_CALLS = re.compile(r"[\s,]calls=%?([A-Za-z_][\w.\-]*)\s*(?:,|$)")


@dataclass(frozen=True, slots=True)
class Span:
    """The times [start, end) a computation's instructions occupy."""

    start: int
    end: int


@dataclass(slots=True)
class FlatProgram:
    """A program's instructions in flattened schedule order, with the lookups analyses need."""

    module: HloModule
    root: Computation
    sequence: list[Instruction] = field(default_factory=list)
    time: dict[Instruction, int] = field(default_factory=dict)
    computation_of: dict[Instruction, Computation] = field(default_factory=dict)
    spans: dict[str, Span] = field(default_factory=dict)
    operands: dict[Instruction, list[Instruction]] = field(default_factory=dict)
    users: dict[Instruction, list[tuple[Instruction, int]]] = field(default_factory=dict)
    roots: set[Instruction] = field(default_factory=set)
    async_context: dict[str, Instruction] = field(default_factory=dict)  # computation -> start
    _parameters: dict[tuple[str, int], Instruction | None] = field(default_factory=dict)

    @property
    def end_time(self) -> int:
        return len(self.sequence)

    def is_root(self, instruction: Instruction) -> bool:
        return instruction in self.roots

    def parameter(self, computation: str, number: int) -> Instruction | None:
        key = (computation, number)
        if key not in self._parameters:
            self._parameters[key] = next(
                (i for i in self.module.computation(computation).instructions
                 if i.opcode == "parameter" and i.parameter_number == number), None)
        return self._parameters[key]


def control_flow_callees(instruction: Instruction) -> tuple[str, ...]:
    """The computations an instruction runs as control flow, in the order XLA numbers them."""
    opcode = instruction.opcode
    if opcode not in SCHEDULED_CALLERS:
        return ()
    if opcode == "while":
        return tuple(n for n in (instruction.called_computation("condition"),
                                 instruction.called_computation("body")) if n)
    if opcode == "conditional":
        return branch_computations(instruction)
    if opcode in ("call", "async-start"):
        return instruction.called_computations
    return ()


def branch_computations(instruction: Instruction) -> tuple[str, ...]:
    raw = instruction.raw_attribute("branch_computations")
    if raw is not None:
        return attr.computation_names(raw)
    return tuple(n for n in (instruction.called_computation("true_computation"),
                             instruction.called_computation("false_computation")) if n)


def fused_computation(instruction: Instruction) -> str | None:
    """The computation a fusion runs (`calls=`), found without parsing every attribute."""
    match = _CALLS.search(instruction.text, instruction.operands_end)
    if match is not None:
        return match.group(1)
    names = instruction.called_computations
    return names[0] if names else None


def flatten(module: HloModule, root: str | None = None) -> FlatProgram:
    """The flattened program of `root` (default: the entry computation)."""
    computation = module.computation(root) if root else module.entry
    program = FlatProgram(module=module, root=computation)
    _Flattener(program).visit(computation, None)
    _link_async_done(program)
    return program


class _Flattener:
    def __init__(self, program: FlatProgram) -> None:
        self.program = program

    def visit(self, computation: Computation, async_start: Instruction | None) -> None:
        program = self.program
        if computation.name in program.spans:
            return
        program.spans[computation.name] = Span(len(program.sequence), -1)  # marks it visited
        if async_start is not None:
            program.async_context[computation.name] = async_start
        operands = self._resolve(computation)
        for instruction in computation.instructions:
            inner_context = instruction if instruction.opcode == "async-start" else async_start
            for callee in control_flow_callees(instruction):
                self.visit(program.module.computation(callee), inner_context)
            program.time[instruction] = len(program.sequence)
            program.sequence.append(instruction)
            program.computation_of[instruction] = computation
            program.operands[instruction] = operands[instruction]
        program.spans[computation.name] = Span(program.spans[computation.name].start,
                                               len(program.sequence))
        program.roots.add(computation.root)

    def _resolve(self, computation: Computation) -> dict[Instruction, list[Instruction]]:
        by_name = {i.name: i for i in computation.instructions}
        users = self.program.users
        resolved: dict[Instruction, list[Instruction]] = {}
        for instruction in computation.instructions:
            users.setdefault(instruction, [])
            found = [by_name[name] for name in instruction.operands if name in by_name]
            resolved[instruction] = found
            for number, operand in enumerate(found):
                users.setdefault(operand, []).append((instruction, number))
        return resolved


def _link_async_done(program: FlatProgram) -> None:
    """Replaces each async context's start by the async-done that ends it (found via operands)."""
    done_of: dict[Instruction, Instruction] = {}
    for instruction in program.sequence:
        if instruction.opcode == "async-done":
            done_of[async_start_of(program, instruction)] = instruction
    for name, start in list(program.async_context.items()):
        program.async_context[name] = done_of.get(start, start)


def async_start_of(program: FlatProgram, instruction: Instruction) -> Instruction:
    """The async-start an async-update or async-done continues."""
    while instruction.opcode in ("async-update", "async-done") and program.operands[instruction]:
        instruction = program.operands[instruction][0]
    return instruction


def async_computation(program: FlatProgram, instruction: Instruction) -> str | None:
    """The computation an async-start/update/done runs."""
    start = async_start_of(program, instruction)
    names = start.called_computations if start.opcode == "async-start" else ()
    return names[0] if names else None
