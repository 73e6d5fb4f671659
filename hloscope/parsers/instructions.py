"""The careful path for instructions: every form of XLA's grammar the one-line fast path leaves.

A statement's text may hold several instructions and the `}` closing the computation (a
computation on one line), instructions nested as operands, computations written inline as an
attribute's value, instructions without a result shape, and XLA's async shorthand. Each is turned
into what XLA's parser (xla/hlo/parser/hlo_parser.cc, jaxlib 0.10.2) builds from it:

- a nested operand `multiply(...)` becomes an instruction of its own named `multiply.anon`, added
  before its user (depth first, in operand order), and the operand names it;
- an inline body `to_apply={ ... }` becomes a computation named `_` (then `_.1`, ...) placed
  before the computation that uses it;
- a shape-less instruction gets the shape XLA infers (hloscope.parsers.infer_shape);
- `X-start(ops)` for an opcode X that has no `-start` form of its own becomes `async-start` that
  calls a new computation `async_wrapped` (`async_param` parameters, then X as its root, with the
  start's attributes); `X-update` and `X-done` become `async-update` and `async-done`.

Instruction texts keep the offsets of the statement they come from (what precedes them is blanked,
line breaks kept), so every later error still points at the right file:line:col.
"""
from __future__ import annotations

import re
from typing import Protocol

from hloscope.errors import ParseError
from hloscope.model.instruction import CALLED_COMPUTATION_KEYS, Instruction
from hloscope.model.module import Computation, HloModule
from hloscope.model.opcodes import is_known
from hloscope.model.scan import find_matching, split_top_level
from hloscope.model.shape import Shape
from hloscope.model.shape_text import TextSyntaxError, parse_shape_prefix
from hloscope.parsers.checks.xla_facts import GENERIC_ATTRIBUTES
from hloscope.parsers.infer_shape import InferenceError, infer
from hloscope.parsers.statement import (
    NESTED_INSTRUCTION,
    OPCODE,
    SHAPE_START,
    attributes_end,
    blank,
    skip_blanks,
)


class _Parser(Protocol):
    """What the reader needs of hloscope.parsers.text.TextParser (which owns the reader)."""

    source: str
    computation: Computation | None
    _root_seen: bool
    _intern: dict[str, str]
    _tuple_shapes: dict[str, str]

    def _append(self, instruction: Instruction) -> None: ...
    def _located(self, text: str, line_number: int, offset: int, message: str) -> ParseError: ...
    def _close_computation(self, line: str, line_number: int) -> None: ...
    def _current_module(self) -> HloModule: ...

HEAD = re.compile(r"\s*(ROOT\s+)?%?([A-Za-z_][\w.\-]*)\s*=\s*")
# Where a tuple shape may end: a `)` followed by the opcode. Only a candidate, confirmed by the
# memo of tuple shapes parsed in full (a prefix that is not a whole shape is never in it).
_BLANKS_BEFORE_LAYOUT = re.compile(r"(?<=\])\s+(?=\{)")
_SHAPE_TAIL = re.compile(r"\)[ \t]+[a-z][a-z0-9\-]*\(")
_ASYNC_SUFFIXES = (("-start", "async-start"), ("-update", "async-update"),
                   ("-done", "async-done"))


def async_shorthand(opcode: str) -> tuple[str, str] | None:
    """(wrapped opcode, async opcode) for `X-start`/`X-update`/`X-done` where X is an opcode and
    the whole is not one of XLA's own opcodes (all-reduce-start, copy-done, ...)."""
    if is_known(opcode) or "-" not in opcode:
        return None
    for suffix, kind in _ASYNC_SUFFIXES:
        if opcode.endswith(suffix) and is_known(opcode[: -len(suffix)]):
            return opcode[: -len(suffix)], kind
    return None


class InstructionReader:
    """Parses statement texts into the parser's current computation (see the module docstring)."""

    def __init__(self, parser: _Parser) -> None:
        self.parser = parser
        self._names: dict[str, Instruction] = {}
        self._names_of: Computation | None = None
        self._names_upto = 0
        self._used: dict[str, int] = {}

    # --- statements ------------------------------------------------------------------------
    def statements(self, text: str, line_number: int) -> None:
        """Every instruction of `text`, and the computation's `}` (with what follows it)."""
        parser = self.parser
        pos = skip_blanks(text, 0)
        message = "expected an instruction 'name = shape opcode(operands)'"
        instruction_before = False  # then `key=value` without its comma is reported as such
        while pos < len(text):
            if text[pos] == "}":
                parser._close_computation(blank(text[:pos]) + text[pos:], line_number)
                return
            head = HEAD.match(text, pos)
            if not head or (instruction_before and not SHAPE_START.match(text, head.end())
                            and not OPCODE.match(text, head.end())):
                raise parser._located(text, line_number, pos, message)
            instruction, end = self._rhs(text, pos, head.end(), line_number, head.group(2),
                                         head.group(1) is not None, nested=False)
            parser._append(instruction)
            pos = skip_blanks(text, end)
            message = "expected ',' or the end of the instruction"
            instruction_before = True

    # --- one instruction -------------------------------------------------------------------
    def _rhs(self, text: str, start: int, pos: int, line_number: int, name: str | None,
             is_root: bool, nested: bool) -> tuple[Instruction, int]:
        parser = self.parser
        shape_text = None
        try:
            if SHAPE_START.match(text, pos):
                shape_text, pos = self._shape(text, pos)
            opcode = OPCODE.match(text, pos)
            if not opcode:
                raise TextSyntaxError("expected an opcode followed by '('", skip_blanks(text, pos))
            paren = opcode.end() - 1
            close = find_matching(text, paren)
            if (opcode.group(1) not in ("constant", "parameter")
                    and NESTED_INSTRUCTION.search(text, paren + 1, close)):
                text = self._nested_operands(text, paren, close, line_number)
                close = find_matching(text, paren)
            end, items = (close + 1, []) if nested else attributes_end(text, close + 1)
            text = self._inline_computations(text, items, line_number)
        except TextSyntaxError as error:
            raise parser._located(text, line_number, error.offset, error.message) from None
        opcode_name = parser._intern.setdefault(opcode.group(1), opcode.group(1))
        shorthand = async_shorthand(opcode_name)
        if name is None:
            name = self._unique(f"{opcode_name}.anon")
        own_text = text if not text[:start].strip() and not text[end:].strip() \
            else blank(text[:start]) + text[start:end]
        instruction = Instruction(name, opcode_name, shape_text or "", own_text, opcode.end(),
                                  close, line_number, is_root, parser.source)
        if shape_text is None:
            instruction.shape_text = self._inferred(instruction, opcode.start(1))
        if shorthand is not None:
            self._expand_async(instruction, *shorthand)
        return instruction, end

    def _shape(self, text: str, pos: int) -> tuple[str, int]:
        """The result shape's text (blanks normalized, interned) and its end. A tuple shape's
        text, up to its matching `)`, is parsed once per distinct text: a tuple-shaped statement
        (while, custom-call, fusion, parameter) always takes this path, and their shapes repeat."""
        tuples = self.parser._tuple_shapes
        if text[pos] == "(":
            tail = _SHAPE_TAIL.search(text, pos)
            known = tuples.get(text[pos : tail.start() + 1]) if tail is not None else None
            if known is not None and tail is not None:
                return known, tail.start() + 1
        _, shape_end = parse_shape_prefix(text, pos)
        shape_text = _BLANKS_BEFORE_LAYOUT.sub("", " ".join(text[pos:shape_end].split()))
        shape_text = self.parser._intern.setdefault(shape_text, shape_text)
        if text[pos] == "(":
            tuples[text[pos:shape_end]] = shape_text
        return shape_text, shape_end

    def _nested_operands(self, text: str, paren: int, close: int, line_number: int) -> str:
        """Adds each operand written as an instruction; the operand then names it."""
        replaced = []
        for item_start, item_end in split_top_level(text, paren + 1, close):
            first = skip_blanks(text, item_start)
            if not _is_instruction(text, first, item_end):
                continue
            instruction, _ = self._rhs(text[:item_end], first, first, line_number, None, False,
                                       nested=True)
            self.parser.computation.instructions.append(instruction)  # type: ignore[union-attr]
            replaced.append((first, item_end, instruction.name))
        for first, item_end, name in reversed(replaced):
            text = text[:first] + _padded(name, text[first:item_end]) + text[item_end:]
        return text

    def _inline_computations(self, text: str, items: list[tuple[str, int, int]],
                             line_number: int) -> str:
        """Turns each `key={ instructions }` naming a computation into a computation `_`."""
        for key, value_start, value_end in items:
            if (key not in CALLED_COMPUTATION_KEYS or text[value_start] != "{"
                    or not HEAD.match(text, value_start + 1)):
                continue
            name = self._unique_computation("_")
            first_line = line_number + text.count("\n", 0, value_start)
            self._in_new_computation(
                Computation(name=name, line=first_line),
                blank(text[: value_start + 1]) + text[value_start + 1 : value_end], line_number)
            text = text[:value_start] + _padded(name, text[value_start:value_end]) \
                + text[value_end:]
        return text

    def _in_new_computation(self, computation: Computation, text: str, line_number: int) -> None:
        parser = self.parser
        outer, outer_root_seen = parser.computation, parser._root_seen
        self._insert_before_current(computation)
        parser.computation, parser._root_seen = computation, False
        self.statements(text, line_number)
        parser.computation, parser._root_seen = outer, outer_root_seen

    # --- shapes ----------------------------------------------------------------------------
    def _inferred(self, instruction: Instruction, opcode_offset: int) -> str:
        operands = []
        for name in instruction.operands:
            operand = self._defined(name)
            if operand is None:
                raise instruction.error(f"operand {name} is not defined before its use, so the "
                                        "result shape cannot be inferred", opcode_offset)
            operands.append(operand.shape)
        try:
            shape = infer(instruction, operands, self._root_shape)
        except InferenceError as error:
            raise instruction.error(str(error), opcode_offset) from None
        text = str(shape)
        return self.parser._intern.setdefault(text, text)

    def _root_shape(self, name: str) -> Shape:
        return self.parser._current_module().computations[name.lstrip("%")].root.shape

    def _defined(self, name: str) -> Instruction | None:
        computation = self.parser.computation
        assert computation is not None
        if self._names_of is not computation:
            self._names, self._names_of, self._names_upto = {}, computation, 0
        for instruction in computation.instructions[self._names_upto :]:
            self._names[instruction.name] = instruction
        self._names_upto = len(computation.instructions)
        return self._names.get(name)

    # --- async shorthand -------------------------------------------------------------------
    def _expand_async(self, instruction: Instruction, wrapped: str, kind: str) -> None:
        instruction.opcode = kind
        if kind != "async-start":
            return
        shape = instruction.shape
        if not (shape.is_tuple and len(shape.tuple_shapes) >= 2
                and shape.tuple_shapes[0].is_tuple):
            raise instruction.error(f"{wrapped}-start: the shape must be ((operand shapes), "
                                    "result shape, ...)", instruction.operands_start)
        computation = Computation(name=self._unique_computation("async_wrapped"),
                                  line=instruction.line)
        operand_texts, result_text = _wrapped_shape_texts(instruction.shape_text, shape)
        parameters = []
        for number, parameter_shape in enumerate(operand_texts):
            name = self._unique("async_param")
            parameters.append(name)
            computation.instructions.append(
                _synthetic(name, "parameter", parameter_shape, str(number), "", instruction))
        tail = _without_thread(instruction)
        thread = instruction.raw_attribute(_THREAD)
        if thread is not None:
            computation.execution_thread = thread.strip().strip('"')
        root = _synthetic(self._unique(wrapped), wrapped, result_text,
                          ", ".join(parameters), tail, instruction)
        root.is_root = True
        computation.instructions.append(root)
        self._insert_before_current(computation)
        kept = "".join(f", {key}={instruction.raw_attribute(key)}"
                       for key in instruction.attribute_names
                       if key in ASYNC_START_ATTRIBUTES and key not in CALLED_COMPUTATION_KEYS)
        instruction.text = (instruction.text[: instruction.operands_end + 1] + kept
                            + f", calls={computation.name}")
        instruction._attributes = None

    # --- names -----------------------------------------------------------------------------
    def _unique(self, base: str) -> str:
        """XLA's NameUniquer for generated names: `base`, then `base.1`, `base.2`, ..."""
        count = self._used.get(base, 0)
        self._used[base] = count + 1
        return base if count == 0 else f"{base}.{count}"

    def _unique_computation(self, base: str) -> str:
        computations = self.parser._current_module().computations
        name = self._unique(base)
        while name in computations:
            name = self._unique(base)
        return name

    def _insert_before_current(self, computation: Computation) -> None:
        """XLA adds a computation it makes while parsing another before that one."""
        module = self.parser._current_module()
        current = self.parser.computation
        reordered: dict[str, Computation] = {}
        for name, existing in module.computations.items():
            if existing is current:
                reordered[computation.name] = computation
            reordered[name] = existing
        reordered.setdefault(computation.name, computation)
        module.computations = reordered


# What an expanded `X-start` keeps for itself; the wrapped X takes its own attributes.
ASYNC_START_ATTRIBUTES = (GENERIC_ATTRIBUTES - {"backend_config"}) | {
    "async_execution_thread", "output_to_operand_aliasing"}


_THREAD = "async_execution_thread"


def _without_thread(instruction: Instruction) -> str:
    """The attribute text of an `X-start` for its wrapped X, less `async_execution_thread`: XLA
    reads that one for the async-start (the thread the wrapped computation runs on), and every
    other attribute for X."""
    text, start = instruction.text, instruction.operands_end + 1
    span = instruction._attribute_spans().get(_THREAD)  # noqa: SLF001  (same model)
    if span is None:
        return text[start:]
    comma = text.rfind(",", start, span[0] - len(_THREAD))
    return text[start:comma] + text[span[1] :]


def _is_instruction(text: str, pos: int, end: int) -> bool:
    """Whether the operand text[pos:end] is `[shape] opcode(...)` rather than `[shape] name`."""
    if SHAPE_START.match(text, pos):
        try:
            _, pos = parse_shape_prefix(text[:end], pos)
        except TextSyntaxError:
            return False
    return OPCODE.match(text, pos, end) is not None


def _padded(name: str, span: str) -> str:
    """`name` in place of `span`, padded to its length with its line breaks kept."""
    return name + blank(span[len(name) :]) if len(name) <= len(span) else name


def _wrapped_shape_texts(shape_text: str, shape: Shape) -> tuple[list[str], str]:
    """The wrapped instruction's operand shapes and result shape, from an async-start's
    `((operands), result, ...)`: as written where it holds buffer shapes `b(...)`, which the
    Shape model keeps as their arrays, else printed from the shape."""
    if "b(" not in shape_text:
        return [str(s) for s in shape.tuple_shapes[0].tuple_shapes], str(shape.tuple_shapes[1])
    items = [shape_text[a:b].strip() for a, b in split_top_level(shape_text, 1,
                                                                  len(shape_text) - 1)]
    operands = items[0][1:-1]
    return ([operands[a:b].strip() for a, b in split_top_level(operands) if operands.strip()],
            items[1])


def _synthetic(name: str, opcode: str, shape_text: str, operands: str, tail: str,
               origin: Instruction) -> Instruction:
    text = f"{name} = {shape_text} {opcode}({operands})"
    start = len(text) - len(operands) - 1
    return Instruction(name, opcode, shape_text, text + tail, start, len(text) - 1, origin.line,
                       False, origin.source)

