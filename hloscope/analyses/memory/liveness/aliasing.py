"""Which values must share one buffer (XLA's HloAliasAnalysis): the buffers of a program.

Values are merged into one buffer when
- an entry output is declared to alias a parameter (`input_output_alias`, donated arguments);
- they flow through a while: its initial value, its body's and condition's parameters, its
  body's root and the while's own values, index by index;
- they are a conditional's result and its branches' roots;
- an instruction updates an operand in place (`inplace.py`).
Within one buffer the live ranges are then made disjoint (`ranges.py`), so a buffer's bytes are
counted once at any moment.
"""
from __future__ import annotations

from collections.abc import Callable

from hloscope.analyses.memory.liveness.inplace import InPlaceRules
from hloscope.analyses.memory.liveness.program import FlatProgram, branch_computations
from hloscope.analyses.memory.liveness.values import Index, Value
from hloscope.model.instruction import Instruction

ValueAt = Callable[[Instruction, Index], Value]


class UnionFind:
    def __init__(self) -> None:
        self.parent: dict[int, int] = {}

    def find(self, key: int) -> int:
        parent = self.parent
        root = key
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(key, key) != root:
            parent[key], key = root, parent[key]
        return root

    def copy(self) -> UnionFind:
        found = UnionFind()
        found.parent = dict(self.parent)
        return found

    def union(self, a: int, b: int) -> None:
        root_a, root_b = self.find(a), self.find(b)
        if root_a != root_b:
            self.parent[max(root_a, root_b)] = min(root_a, root_b)


def alias_buffers(program: FlatProgram, values: list[Value], value_at: ValueAt) -> UnionFind:
    """A union-find over value ids whose sets are XLA's HloBuffers."""
    buffers = UnionFind()
    rules = InPlaceRules(program.module)
    callers = _control_flow_callers(program)
    outputs = _aliased_outputs(program)
    for value in values:
        for other in _aliased_values(program, value, value_at, rules, callers, outputs):
            buffers.union(value.id, other.id)
    return buffers


def _aliased_values(program: FlatProgram, value: Value, value_at: ValueAt, rules: InPlaceRules,
                    callers: dict[str, Instruction], outputs: dict[Index, tuple[int, Index]]
                    ) -> list[Value]:
    found: list[Value] = []
    entry_root = program.root.root
    for instruction, index in value.positions:
        if instruction is entry_root and index in outputs:
            number, parameter_index = outputs[index]
            parameter = program.parameter(program.root.name, number)
            if parameter is not None:
                found.append(value_at(parameter, parameter_index))
        if program.is_root(instruction):
            caller = callers.get(program.computation_of[instruction].name)
            if caller is not None and _returns_to(caller, program, instruction):
                found.append(value_at(caller, index))
        for (operand_number, operand_index), output_index in rules.pairs(instruction):
            if output_index == index:
                operand = program.operands[instruction][operand_number]
                found.append(value_at(operand, operand_index))
    found += _loop_values(program, value, value_at, callers)
    for user, operand_number, index in value.uses:
        if user.opcode == "while":
            found.append(value_at(user, index))
        for (number, operand_index), output_index in rules.pairs(user):
            if number == operand_number and operand_index == index:
                found.append(value_at(user, output_index))
    return found


def _loop_values(program: FlatProgram, value: Value, value_at: ValueAt,
                 callers: dict[str, Instruction]) -> list[Value]:
    """A while body's or condition's parameter values share the while's buffers."""
    if value.instruction.opcode != "parameter":
        return []
    caller = callers.get(program.computation_of[value.instruction].name)
    if caller is None or caller.opcode != "while":
        return []
    return [value_at(caller, value.index)]


def _returns_to(caller, program: FlatProgram, root) -> bool:
    """A body root feeds its while; a branch root its conditional (not a condition's root)."""
    computation = program.computation_of[root].name
    if caller.opcode == "while":
        return caller.called_computation("body") == computation
    return caller.opcode == "conditional"


def _control_flow_callers(program: FlatProgram) -> dict[str, Instruction]:
    callers: dict[str, Instruction] = {}
    for instruction in program.sequence:
        if instruction.opcode == "while":
            for key in ("condition", "body"):
                name = instruction.called_computation(key)
                if name:
                    callers.setdefault(name, instruction)
        elif instruction.opcode == "conditional":
            for name in branch_computations(instruction):
                callers.setdefault(name, instruction)
    return callers


def _aliased_outputs(program: FlatProgram) -> dict[Index, tuple[int, Index]]:
    if program.root is not program.module.entry:
        return {}
    return {output: (number, index)
            for output, number, index, _ in program.module.input_output_alias}
