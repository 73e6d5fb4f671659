"""Which instruction's metadata names each instruction of a flattened program.

XLA drops metadata from many instructions it creates: a CPU fusion carries none of its own, a
convert or copy it inserts has none. Such an instruction is named (JAX name stack `op_name`,
source file and line) by, in turn: the last named instruction inside its fused computation (the
root's side first), its first named operand (parameters and constants name nothing: their
op_name is a pytree path), or its first named user — as `hloscope flops` resolves names. A
parameter of a loop body, branch or called computation is named by the instruction that runs it.
`Names.borrowed` holds the instructions named by a neighbour (operand, user or caller): their
phase says where their data came from, not where it is read (see `categories.py`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from hloscope.analyses.memory.liveness.program import (
    FlatProgram,
    control_flow_callees,
    fused_computation,
)
from hloscope.model.instruction import Instruction

NAMELESS = frozenset({"parameter", "constant"})


@dataclass(slots=True)
class Names:
    """instruction -> the instruction whose metadata names it, and that op_name; the
    instructions whose name is borrowed from a neighbour."""

    namer: dict[Instruction, Instruction] = field(default_factory=dict)
    op_name: dict[Instruction, str] = field(default_factory=dict)
    borrowed: set[Instruction] = field(default_factory=set)


def resolve_names(program: FlatProgram) -> Names:
    resolver = _Resolver(program)
    found: dict[Instruction, Instruction | None] = {
        i: (i if resolver.op_name(i) else resolver.fused_namer(i))
        for i in program.sequence if i.opcode not in NAMELESS}
    borrowed = {i for i, namer in found.items() if namer is None}
    for instruction in program.sequence:
        if instruction in found and found[instruction] is None:
            found[instruction] = next(
                (found[o] for o in program.operands[instruction] if found.get(o)), None)
    for instruction in reversed(program.sequence):
        if instruction in found and found[instruction] is None:
            found[instruction] = next(
                (found[u] for u, _ in program.users.get(instruction, ()) if found.get(u)), None)
    _name_callee_parameters(program, found)
    names = Names(borrowed=borrowed | {i for i in found if i.opcode == "parameter"})
    for instruction, namer in found.items():
        if namer is not None:
            names.namer[instruction] = namer
            names.op_name[instruction] = resolver.op_name(namer)
    return names


def _name_callee_parameters(program: FlatProgram,
                            found: dict[Instruction, Instruction | None]) -> None:
    callers = {callee: i for i in program.sequence for callee in control_flow_callees(i)}
    for instruction in program.sequence:
        if instruction.opcode != "parameter":
            continue
        caller = callers.get(program.computation_of[instruction].name)
        while caller is not None and found.get(caller) is None:
            caller = callers.get(program.computation_of[caller].name)
        if caller is not None:
            found[instruction] = found[caller]


class _Resolver:
    def __init__(self, program: FlatProgram) -> None:
        self.module = program.module
        self._op_names: dict[Instruction, str] = {}
        self._fused: dict[str, Instruction | None] = {}

    def op_name(self, instruction: Instruction) -> str:
        name = self._op_names.get(instruction)
        if name is None:
            name = self._op_names[instruction] = instruction.op_name
        return name

    def fused_namer(self, instruction: Instruction) -> Instruction | None:
        """The last named instruction of a fusion's computation (memoised per computation)."""
        if instruction.opcode != "fusion":
            return None
        name = fused_computation(instruction)
        if name is None:
            return None
        if name not in self._fused:
            self._fused[name] = None
            for inner in reversed(self.module.computation(name).instructions):
                namer = inner if self.op_name(inner) else self.fused_namer(inner)
                if namer is not None:
                    self._fused[name] = namer
                    break
        return self._fused[name]
