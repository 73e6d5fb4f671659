"""Deep validation: parse everything the loader leaves for later and check every reference.

Loading checks the structure of every statement; this goes further, as XLA's parser does: every
shape, operand list and attribute list parses, typed attributes have the form their key implies,
operands name instructions of the same computation, and called computations exist.
"""
from __future__ import annotations

from hloscope._native import scan as native
from hloscope.gc_pause import paused_gc
from hloscope.model.instruction import CALLED_COMPUTATION_KEYS, TYPED_CONVERTERS, Instruction
from hloscope.model.module import Computation, HloModule

_CALLED_KEYS = frozenset(CALLED_COMPUTATION_KEYS)


def validate(module: HloModule) -> None:
    """Raises ParseError at the first malformed or dangling piece of the module.

    Python's cyclic collector is paused meanwhile, as during the parse (hloscope.parsers.text):
    what it builds holds no cycles."""
    with paused_gc():
        _validate(module)


def _validate(module: HloModule) -> None:
    module.entry_computation_layout  # noqa: B018  (parsing is the check)
    module.input_output_alias  # noqa: B018
    shapes: set[str] = set()  # shape texts that parsed
    for computation in module.computations.values():
        _validate_computation(module, computation, shapes)


def _validate_computation(module: HloModule, computation: Computation, shapes: set[str]) -> None:
    """Each instruction validated; with the C accelerator (hloscope._native), `validate_run`
    passes each run of instructions that need no closer look and stops at the first that does,
    which _validate_instruction then validates here."""
    instructions = computation.instructions
    names = {instruction.name for instruction in instructions}
    count = len(instructions)
    index = 0
    while index < count:
        if native is not None:
            index = native.validate_run(instructions, index, names, shapes, TYPED_CONVERTERS,
                                        module.computations)
            if index >= count:
                return
        _validate_instruction(module, computation, instructions[index], names)
        shapes.add(instructions[index].shape_text)
        index += 1


def _validate_instruction(module: HloModule, computation: Computation, instruction: Instruction,
                          names: set[str]) -> None:
    instruction.shape  # noqa: B018
    for operand in instruction.operands:
        if operand not in names:
            raise instruction.error(f"operand {operand} is not defined in computation "
                                    f"{computation.name}", instruction.operands_start)
    spans = instruction.convert_typed_attributes()  # every attribute split, typed converted
    if not _CALLED_KEYS.isdisjoint(spans):
        _check_called(module, instruction)


def _check_called(module: HloModule, instruction: Instruction) -> None:
    """Called computations exist; the attribute split this makes is dropped afterwards when the
    load had not made it, so that validating keeps the loaded module's memory."""
    split_before = instruction._attributes is not None  # noqa: SLF001  (same layer's model)
    try:
        for called in instruction.called_computations:
            if called not in module.computations:
                offset = instruction.text.find(called, instruction.operands_end)
                raise instruction.error(f"computation {called} is not defined", max(offset, 0))
    finally:
        if not split_before:
            instruction._attributes = None  # noqa: SLF001
