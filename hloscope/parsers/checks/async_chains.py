"""Async chains: `async-start` wraps a computation; `async-update` and `async-done` continue one.

XLA's parser refuses an async-start without `calls=`, an update or done whose operand is not a
single async-start or async-update ("AsyncUpdate and AsyncDone expect a single async op as their
operand"), one whose `calls=` names another computation than its start's ("Expect
async_wrapped_computation to be ...") and one whose `async_execution_thread=` is not its start's
("Expect async_execution_thread to be ...", the start's default being "main"). Checked in one
pass over the computation's async ops.
"""
from __future__ import annotations

from hloscope.model.instruction import Instruction
from hloscope.model.module import Computation

_CONTINUATIONS = ("async-update", "async-done")


_MAIN_THREAD = "main"  # XLA's HloInstruction::kMainExecutionThread
_Chain = tuple[str, str]  # (the computation it wraps, its execution thread)


def check_async_chains(computation: Computation) -> None:
    """Raises a located ParseError at the first async op that does not continue a chain."""
    chains: dict[str, _Chain] = {}  # async-start/update name -> its chain
    for instruction in computation.instructions:
        opcode = instruction.opcode
        if opcode == "async-start":
            chains[instruction.name] = (instruction.required_called_computation("calls"),
                                        _thread(instruction) or _MAIN_THREAD)
        elif opcode in _CONTINUATIONS:
            chain = _continued(instruction, chains)
            if opcode == "async-update":
                chains[instruction.name] = chain


def _thread(instruction: Instruction) -> str | None:
    value = instruction.raw_attribute("async_execution_thread")
    return None if value is None else value.strip().strip('"')


def _continued(instruction: Instruction, chains: dict[str, _Chain]) -> _Chain:
    operands = instruction.operands
    if len(operands) != 1 or operands[0] not in chains:
        raise instruction.error("async-update and async-done expect a single async-start or "
                                "async-update as their operand", instruction.operands_start)
    calls, thread = chains[operands[0]]
    given = instruction.called_computation("calls")
    if given is not None and given != calls:
        offset = instruction.text.find(given, instruction.operands_end)
        raise instruction.error(f"expected the wrapped computation to be {calls} (the one its "
                                f"async-start calls), but got {given}", max(offset, 0))
    given_thread = _thread(instruction)
    if given_thread is not None and given_thread != thread:
        offset = instruction.text.find("async_execution_thread", instruction.operands_end)
        raise instruction.error(f"expected async_execution_thread to be \"{thread}\" (its "
                                f"async-start's), but got \"{given_thread}\"", max(offset, 0))
    return calls, thread
