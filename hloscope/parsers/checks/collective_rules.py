"""Collective rules of XLA's verifier that its parser lets through (xla/service/hlo_verifier.cc:
CheckInplaceCollectivePermute, CheckDuplicatedSourceOrTarget, the collective-permute-start and
-done shape handlers, HandleRaggedAllToAll).

A collective-permute or collective-permute-start with `slice_sizes=` updates its output buffer in
place: its operands are input buffers, output buffers, input offsets and output offsets, arrays or
tuples alike, each offset a tuple with one index per dimension of its buffer; a source or target
may appear as often as there are offsets, else once. A collective-permute-start is
`(sent, received, context...)` and its done the received part, layouts aside. A
ragged-all-to-all's offsets and sizes (operands 2 to 5) share one shape of rank 1 or 2.
Each failure is a ParseError (exit 4) at the instruction.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import NoReturn

from hloscope.model.instruction import Instruction
from hloscope.model.shape import TUPLE, Shape

Defined = dict[str, Instruction]
_PAIR = re.compile(r"\{\s*(-?\d+)\s*,\s*(-?\d+)\s*\}")


def fail(instruction: Instruction, message: str, offset: int) -> NoReturn:
    raise instruction.error(f"{message} (XLA's verifier refuses it)", offset)


def operand_shapes(instruction: Instruction, defined: Defined) -> list[Shape] | None:
    """The operands' shapes, None where one is not defined above (another check says why)."""
    shapes = []
    for name in instruction.operands:
        operand = defined.get(name)
        if operand is None:
            return None
        shapes.append(operand.shape)
    return shapes


def _check_offset(instruction: Instruction, buffer: Shape, offset: Shape) -> None:
    at = instruction.operands_start
    if not offset.is_tuple:
        fail(instruction, "Buffer offset is not tuple.", at)
    parts = offset.tuple_shapes
    if all(p.is_tuple for p in parts):
        counts = [len(p.tuple_shapes) for p in parts]
    elif all(p.is_array for p in parts):
        counts = [len(parts)]
    else:
        fail(instruction, "Buffer offset should either be a tuple of arrays or a tuple of tuples.",
             at)
    if any(count != buffer.rank for count in counts):
        fail(instruction, "Buffer offset index should have the same number of elements as the "
                          f"buffer's rank ({buffer})", at)


def _check_inplace(instruction: Instruction, shapes: list[Shape]) -> None:
    at = instruction.operands_start
    if len(shapes) != 4:
        fail(instruction, f"Unexpected number of operands: {len(shapes)}.", at)
    inputs, outputs, input_offsets, output_offsets = shapes
    if inputs.is_array and outputs.is_array:
        _check_offset(instruction, inputs, input_offsets)
        _check_offset(instruction, outputs, output_offsets)
        return
    if not (inputs.is_tuple and outputs.is_tuple) or (
            len(inputs.tuple_shapes) != len(outputs.tuple_shapes)):
        fail(instruction, "Unmatching input buffers and output buffers.", at)
    for buffers, offsets, name in ((inputs, input_offsets, "input"),
                                   (outputs, output_offsets, "output")):
        if not offsets.is_tuple or len(offsets.tuple_shapes) != len(buffers.tuple_shapes):
            fail(instruction, f"Unmatching {name} buffers and {name} offset.", at)
        for buffer, offset in zip(buffers.tuple_shapes, offsets.tuple_shapes, strict=True):
            _check_offset(instruction, buffer, offset)


def _allowed_count(shapes: list[Shape] | None, inplace: bool) -> int:
    if not inplace or shapes is None:
        return 1
    offsets = shapes[2]
    if shapes[0].is_array:
        return len(offsets.tuple_shapes)
    return len(offsets.tuple_shapes[0].tuple_shapes) if offsets.tuple_shapes else 0


def _check_pairs(instruction: Instruction, allowed: int) -> None:
    value = instruction.raw_attribute("source_target_pairs") or ""
    at = instruction.text.find("source_target_pairs", instruction.operands_end)
    seen: tuple[dict[int, int], dict[int, int]] = ({}, {})
    for pair in _PAIR.findall(value):
        for role, number, counts in zip(("Source", "Target"), map(int, pair), seen, strict=True):
            if number < 0:
                fail(instruction, f"{role} {number} in the instruction's source-target pair must "
                                  "be >= 0", at)
            if counts.get(number, 0) == allowed:
                times = "once" if allowed == 1 else f"{allowed} times"
                fail(instruction, f"{role} {number} appears more than {times} in instruction's "
                                  "source-target pairs", at)
            counts[number] = counts.get(number, 0) + 1


def _expected_start(shapes: list[Shape], inplace: bool) -> tuple[Shape, Shape]:
    if inplace:
        return shapes[0], shapes[1]
    if len(shapes) == 1:
        return shapes[0], shapes[0]
    both = Shape(TUPLE, tuple_shapes=tuple(shapes))
    return both, both


def check_permute(instruction: Instruction, defined: Defined) -> None:
    shapes = operand_shapes(instruction, defined)
    inplace = instruction.raw_attribute("slice_sizes") is not None
    if inplace and shapes is not None:
        _check_inplace(instruction, shapes)
    _check_pairs(instruction, _allowed_count(shapes, inplace))
    if instruction.opcode != "collective-permute-start" or not shapes:
        return
    shape = instruction.shape
    sent, received = _expected_start(shapes, inplace)
    if (not shape.is_tuple or len(shape.tuple_shapes) < 2
            or shape.tuple_shapes[0].without_layout() != sent.without_layout()
            or shape.tuple_shapes[1].without_layout() != received.without_layout()):
        expected = Shape(TUPLE, tuple_shapes=(sent, received, *shape.tuple_shapes[2:]))
        fail(instruction, "Expected instruction to have shape equal to "
                          f"{expected.without_layout()}, actual shape is {shape}",
             instruction.operands_start)


def check_permute_done(instruction: Instruction, defined: Defined) -> None:
    start = defined.get(instruction.operands[0]) if len(instruction.operands) == 1 else None
    if start is None:
        return
    if not start.shape.is_tuple or len(start.shape.tuple_shapes) < 2:
        fail(instruction, f"collective-permute-done's operand must be a tuple, not {start.shape}",
             instruction.operands_start)
    received = start.shape.tuple_shapes[1]
    if instruction.shape.without_layout() != received.without_layout():
        fail(instruction, "Expected instruction to have shape equal to "
                          f"{received.without_layout()}, actual shape is {instruction.shape}",
             instruction.operands_start)


def check_ragged_all_to_all(instruction: Instruction, defined: Defined) -> None:
    shapes = operand_shapes(instruction, defined)
    if shapes is None or len(shapes) != 6:
        return
    for i in range(3, 6):
        if shapes[i - 1].rank not in (1, 2):
            fail(instruction, f"RaggedAllToAll operand {i - 1} must be rank 1 or 2, not "
                              f"{shapes[i - 1]}", instruction.operands_start)
        if shapes[i - 1].without_layout() != shapes[i].without_layout():
            fail(instruction, f"RaggedAllToAll operands have different shapes ({i - 1}, {i}): "
                              f"{shapes[i - 1]} and {shapes[i]}", instruction.operands_start)


COLLECTIVE_RULES: dict[str, Callable[[Instruction, Defined], None]] = {
    "collective-permute": check_permute, "collective-permute-start": check_permute,
    "collective-permute-done": check_permute_done, "ragged-all-to-all": check_ragged_all_to_all,
}
