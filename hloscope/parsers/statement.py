"""Where an HLO statement ends when line breaks do not say so, as XLA's token-based parser reads it.

XLA's grammar ignores line breaks: an instruction is `[ROOT] name = [shape] opcode(operands)`
followed by `, key=value` attributes, and it ends at the first token after them that is not a
comma. So a computation may sit on one line (`ENTRY e { p = f32[2] parameter(0) ROOT ... }`), an
attribute value may start on the next line, and an operand may be a whole instruction
(`add(f32[4] parameter(0), multiply(...))`). These scanners find those boundaries in a statement's
text; they run only on the statements the one-line fast path does not take.
"""
from __future__ import annotations

import re

from hloscope.model.scan import find_matching
from hloscope.model.shape_text import TextSyntaxError

_KEY = re.compile(r"\s*([A-Za-z_][\w.\-]*)\s*=")
_BARE = re.compile(r'[^\s,(){}\[\]"]+')
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_BLANKS = re.compile(r"\s*")
# A shape starts with `(` (a tuple), `b(` (a buffer) or `type[`; an opcode is a word and `(`.
SHAPE_START = re.compile(r"\s*(?:\(|b\(|[a-z][a-z0-9]*\[)")
OPCODE = re.compile(r"\s*([a-z][a-z0-9\-]*)\s*\(")
NESTED_INSTRUCTION = re.compile(r"\s*(?:[a-z][a-z0-9\-]*\s*\(|b\(|\()")


def skip_blanks(text: str, pos: int) -> int:
    match = _BLANKS.match(text, pos)
    return match.end() if match else pos


def value_end(text: str, pos: int) -> int:
    """End of the attribute value starting at `pos`: bracket groups, strings and bare words with
    no blank between them (`{1,0}`, `"x"`, `%add`, `[2,4]<=[8]T(1,0)`, `b01f_01io->b01f`), or a
    blank before a bracket."""
    pos = skip_blanks(text, pos)
    start = pos
    while pos < len(text):
        char = text[pos]
        if char in "({[":
            pos = find_matching(text, pos) + 1
        elif char == '"':
            match = _STRING.match(text, pos)
            if not match:
                raise TextSyntaxError("unterminated string", pos)
            pos = match.end()
        else:
            match = _BARE.match(text, pos)
            if match:
                pos = match.end()
                continue
            after = skip_blanks(text, pos)
            if after == pos or after >= len(text) or text[after] not in "{[":
                break
            pos = after  # libtpu's `mesh['x'=4] {'x'}`: one value with a blank inside
    if pos == start:
        raise TextSyntaxError("expected an attribute value", start)
    return pos


def attributes_end(text: str, pos: int) -> tuple[int, list[tuple[str, int, int]]]:
    """End of the `, key=value` list starting at `pos`, and (key, value start, value end) items."""
    items: list[tuple[str, int, int]] = []
    while True:
        comma = skip_blanks(text, pos)
        if comma >= len(text) or text[comma] != ",":
            return pos, items
        key = _KEY.match(text, comma + 1)
        if not key:
            raise TextSyntaxError("expected attribute 'name=value'",
                                  skip_blanks(text, comma + 1))
        start = skip_blanks(text, key.end())
        pos = value_end(text, start)
        items.append((key.group(1), start, pos))


def body_brace(header: str) -> int:
    """Index of the `{` opening a computation's instruction list in `header`, or -1: the first
    `{` outside parentheses that is not a layout (a layout follows `]` directly)."""
    depth = 0
    pos = 0
    while pos < len(header):
        char = header[pos]
        if char == '"':
            match = _STRING.match(header, pos)
            pos = match.end() if match else len(header)
            continue
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "{" and depth == 0:
            if pos > 0 and header[pos - 1] == "]":
                try:
                    pos = find_matching(header, pos) + 1
                except TextSyntaxError:
                    return -1
                continue
            return pos
        pos += 1
    return -1


def blank(text: str) -> str:
    """`text` with every character but line breaks turned into a space (offsets stay valid)."""
    return re.sub(r"[^\n]", " ", text)
