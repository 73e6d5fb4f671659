"""Operands written `%tuple#i`: XLA's newer printer elides get-tuple-element instructions.

jaxlib 0.11's dumps (seen in an H100 dump of the built-in transformer: 0 get-tuple-element
statements, 124 `#` operands) print no get-tuple-element at all; each use of one names the tuple
and the index instead, `async-start(%arg_tuple.2#7, %arg_tuple.2#0)`, and nested tuples chain the
indices, `%t#1#0`. jaxlib 0.10's parser refuses that text ("cannot parse as an instruction
name"). Every analysis here reads get-tuple-elements, so each `#` operand becomes one again: an
instruction named as the operand is written (`arg_tuple.2#7`), `get-tuple-element(%arg_tuple.2),
index=7` with the element's shape, placed right after the tuple is defined. That is where XLA's
schedule has them: the live-range dump, which still lists them, has 117 of the H100 fixture's
118 there, and the other one an instruction later.
The HloProto of the same program (embedded in its profiler trace) holds those
get-tuple-elements, under XLA's own names, which the text no longer carries.
"""
from __future__ import annotations

from hloscope.errors import ParseError
from hloscope.model.instruction import Instruction
from hloscope.model.module import Computation

INDEX_MARK = "#"
OPCODE = "get-tuple-element"


def may_fold_tuple_indices(text: str) -> bool:
    """Whether `text` has a '#' followed by a digit, as a folded operand has (a cheap test
    that rules out nearly every file of older XLA; shardy's `"#sdy.sharding<...>"` attributes
    have '#' too, never a digit after it)."""
    position = text.find(INDEX_MARK)
    while position != -1:
        if text[position + 1 : position + 2].isdigit():
            return True
        position = text.find(INDEX_MARK, position + 1)
    return False


def materialize_tuple_indices(computation: Computation) -> None:
    """Adds a get-tuple-element for each distinct `name#i[#j...]` operand of `computation`."""
    marked = [instruction for instruction in computation.instructions if _has_mark(instruction)]
    if not marked:
        return
    defined = {instruction.name: instruction for instruction in computation.instructions}
    after: dict[str, list[Instruction]] = {}
    for instruction in marked:
        for operand in instruction.operands:
            if INDEX_MARK in operand and operand not in defined:
                _define(operand, instruction, defined, after)
    rebuilt: list[Instruction] = []
    for instruction in computation.instructions:
        rebuilt.append(instruction)
        _emit_after(instruction.name, after, rebuilt)
    computation.instructions[:] = rebuilt


def _emit_after(name: str, after: dict[str, list[Instruction]], rebuilt: list[Instruction]) -> None:
    """The get-tuple-elements of `name`, then theirs (chained indices), in order of first use."""
    for element in after.pop(name, ()):
        rebuilt.append(element)
        _emit_after(element.name, after, rebuilt)


def _has_mark(instruction: Instruction) -> bool:
    return instruction.text.find(INDEX_MARK, instruction.operands_start,
                                 instruction.operands_end) != -1


def _define(name: str, user: Instruction, defined: dict[str, Instruction],
            after: dict[str, list[Instruction]]) -> Instruction:
    """The get-tuple-element `name` (and the ones it reads, for chained indices)."""
    base, _, index_text = name.rpartition(INDEX_MARK)
    tuple_instruction = defined.get(base)
    if tuple_instruction is None and INDEX_MARK in base:
        tuple_instruction = _define(base, user, defined, after)
    if tuple_instruction is None:
        raise _error(user, name, f"operand {name} reads element {index_text} of {base}, which "
                     "is not defined before its use")
    if not index_text.isdigit():
        raise _error(user, name, f"operand {name}: expected a tuple index after '#'")
    shape = tuple_instruction.shape
    index = int(index_text)
    if not shape.is_tuple or index >= len(shape.tuple_shapes):
        raise _error(user, name, f"operand {name}: {base} has no tuple element {index} "
                     f"(its shape is {shape})")
    head = f"%{name} = {shape.tuple_shapes[index]} {OPCODE}("
    text = f"{head}%{base}), index={index}"
    element = Instruction(name, OPCODE, str(shape.tuple_shapes[index]), text, len(head),
                          len(head) + len(base) + 1, user.line, False, user.source)
    defined[name] = element
    after.setdefault(base, []).append(element)
    return element


def _error(user: Instruction, name: str, message: str) -> ParseError:
    offset = user.text.find(name, user.operands_start, user.operands_end)
    return user.error(message, max(offset, user.operands_start))
