"""Async chains: `async-start` wraps a computation; `async-update` and `async-done` continue one.

XLA's parser refuses an async-start without `calls=`, an update or done whose operand is not a
single async-start or async-update ("AsyncUpdate and AsyncDone expect a single async op as their
operand"), and one whose `calls=` names another computation than its start's ("Expect
async_wrapped_computation to be ..."). Checked in one pass over the computation's async ops.
"""
from __future__ import annotations

from hloscope.model.instruction import Instruction
from hloscope.model.module import Computation

_CONTINUATIONS = ("async-update", "async-done")


def check_async_chains(computation: Computation) -> None:
    """Raises a located ParseError at the first async op that does not continue a chain."""
    wrapped: dict[str, str] = {}  # async-start/update name -> the computation it wraps
    for instruction in computation.instructions:
        opcode = instruction.opcode
        if opcode == "async-start":
            wrapped[instruction.name] = instruction.required_called_computation("calls")
        elif opcode in _CONTINUATIONS:
            calls = _continued(instruction, wrapped)
            if opcode == "async-update":
                wrapped[instruction.name] = calls


def _continued(instruction: Instruction, wrapped: dict[str, str]) -> str:
    operands = instruction.operands
    if len(operands) != 1 or operands[0] not in wrapped:
        raise instruction.error("async-update and async-done expect a single async-start or "
                                "async-update as their operand", instruction.operands_start)
    calls = wrapped[operands[0]]
    given = instruction.called_computation("calls")
    if given is not None and given != calls:
        offset = instruction.text.find(given, instruction.operands_end)
        raise instruction.error(f"expected the wrapped computation to be {calls} (the one its "
                                f"async-start calls), but got {given}", max(offset, 0))
    return calls
