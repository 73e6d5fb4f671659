"""A computation's instructions by name, with operands and users resolved (built once, on demand).

XLA's `users()` lists each user once, in the order the users were added; text order is used here.
"""
from __future__ import annotations

from hloscope.model.instruction import Instruction
from hloscope.model.module import Computation
from hloscope.model.shape import Shape


class ComputationGraph:
    __slots__ = ("computation", "by_name", "_operands", "_users")

    def __init__(self, computation: Computation) -> None:
        self.computation = computation
        self.by_name = {i.name: i for i in computation.instructions}
        self._operands: dict[str, list[Instruction]] = {}
        self._users: dict[str, list[Instruction]] | None = None

    @property
    def root(self) -> Instruction:
        return self.computation.root

    def operands(self, instruction: Instruction) -> list[Instruction]:
        found = self._operands.get(instruction.name)
        if found is None:
            found = [self._lookup(instruction, name) for name in instruction.operands]
            self._operands[instruction.name] = found
        return found

    def operand_shapes(self, instruction: Instruction) -> list[Shape]:
        return [operand.shape for operand in self.operands(instruction)]

    def users(self, instruction: Instruction) -> list[Instruction]:
        if self._users is None:
            self._users = self._collect_users()
        return self._users.get(instruction.name, [])

    def _collect_users(self) -> dict[str, list[Instruction]]:
        users: dict[str, list[Instruction]] = {}
        for instruction in self.computation.instructions:
            for operand in dict.fromkeys(self.operands(instruction)):
                users.setdefault(operand.name, []).append(instruction)
        return users

    def _lookup(self, instruction: Instruction, name: str) -> Instruction:
        try:
            return self.by_name[name]
        except KeyError:
            raise instruction.error(
                f"operand {name} is not an instruction of computation {self.computation.name}",
                instruction.operands_start) from None
