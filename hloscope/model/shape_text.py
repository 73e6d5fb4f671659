"""Parses XLA shape text (`f32[8,<=4]{1,0:T(8,128)S(1)}`, tuples, `token[]`) into model Shapes.

Shapes repeat heavily in real modules, so parsed shapes are cached by their text. Errors raise
`TextSyntaxError` with the offset into the given text; callers turn it into a located ParseError.
"""
from __future__ import annotations

import re
from functools import lru_cache

from hloscope.model.shape import (
    COMBINED_TILE_DIM,
    ELEMENT_BITS,
    TUPLE,
    UNBOUNDED,
    Layout,
    Shape,
)


class TextSyntaxError(ValueError):
    """A syntax error at `offset` of the text being parsed."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


_ARRAY = re.compile(r"\s*([a-z][a-z0-9]*)\[([^\]]*)\]")
_DIM = re.compile(r"\s*(?:(<=)?\s*(\d+)|(\?))\s*$")
_LAYOUT_ITEM = re.compile(r"([A-Z#*]+)((?:\([^()]*\))+)")
_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_DIM_LEVEL_TYPE = re.compile(r"[DCSH]\+?~?")


@lru_cache(maxsize=65536)
def parse_shape(text: str) -> Shape:
    """Parses one complete shape; trailing text is an error."""
    clean = _COMMENT.sub(lambda m: " " * len(m.group()), text) if "/*" in text else text
    shape, end = parse_shape_prefix(clean, 0)
    if clean[end:].strip():
        raise TextSyntaxError("unexpected text after shape", end + _skip_space(clean, end))
    return shape


def _skip_space(text: str, pos: int) -> int:
    return len(text[pos:]) - len(text[pos:].lstrip())


def parse_shape_prefix(text: str, pos: int) -> tuple[Shape, int]:
    """Parses the shape starting at `pos` (leading blanks allowed); returns it and its end."""
    pos += _skip_space(text, pos)
    if pos < len(text) and text[pos] == "(":
        return _parse_tuple(text, pos)
    if text.startswith("b(", pos):
        return _parse_buffer(text, pos)
    match = _ARRAY.match(text, pos)
    if not match:
        raise TextSyntaxError("expected a shape such as f32[2,3]{1,0} or a tuple", pos)
    element_type = match.group(1)
    if element_type not in ELEMENT_BITS:
        raise TextSyntaxError(f"unknown element type '{element_type}'", match.start(1))
    dims, dynamic = _parse_dims(match.group(2), match.start(2))
    _check_array_size(element_type, dims, match.start(2))
    end = match.end()
    layout = None
    brace = end  # XLA's lexer lets blanks part the layout from the dims: `bf16[1,128] {1,0}`
    while brace < len(text) and text[brace] in " \t\r\n":
        brace += 1
    if brace < len(text) and text[brace] == "{":
        layout, end = _parse_layout(text, brace, len(dims))
    return Shape(element_type, dims, dynamic, layout), end


_INT64_MAX = 2**63 - 1


def _check_array_size(element_type: str, dims: tuple[int, ...], pos: int) -> None:
    """XLA keeps dimensions and an array's byte size in int64: its parser refuses a dimension
    past that, and ShapeUtil::ValidateShape a shape whose size may overflow it."""
    if any(d > _INT64_MAX for d in dims):
        raise TextSyntaxError("dimension size does not fit in int64", pos)
    elements = 1
    for d in dims:
        elements *= max(d, 0)
    if elements * ELEMENT_BITS[element_type] // 8 > _INT64_MAX:
        raise TextSyntaxError("shape's size may overflow int64 (XLA's shape validation)", pos)


def _parse_buffer(text: str, pos: int) -> tuple[Shape, int]:
    """`b(<array shape>)`, XLA's buffer type: modelled as the array it holds (same bytes)."""
    inner, end = parse_shape_prefix(text, pos + 2)
    end += _skip_space(text, end)
    if inner.is_tuple or end >= len(text) or text[end] != ")":
        raise TextSyntaxError("expected ')' closing the buffer shape b(...)", end)
    return inner, end + 1


def _parse_dims(text: str, offset: int) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    if not text.strip():
        return (), ()
    dims: list[int] = []
    dynamic: list[bool] = []
    position = offset
    for part in text.split(","):
        match = _DIM.match(part)
        if not match:
            raise TextSyntaxError(f"bad dimension '{part.strip()}'", position)
        if match.group(3):
            dims.append(UNBOUNDED)
            dynamic.append(True)
        else:
            dims.append(int(match.group(2)))
            dynamic.append(bool(match.group(1)))
        position += len(part) + 1
    return tuple(dims), tuple(dynamic)


def _parse_tuple(text: str, pos: int) -> tuple[Shape, int]:
    elements: list[Shape] = []
    pos += 1
    pos += _skip_space(text, pos)
    if pos < len(text) and text[pos] == ")":
        return Shape(TUPLE, tuple_shapes=()), pos + 1
    while True:
        element, pos = parse_shape_prefix(text, pos)
        elements.append(element)
        pos += _skip_space(text, pos)
        if pos < len(text) and text[pos] == ",":
            pos += 1
            continue
        if pos < len(text) and text[pos] == ")":
            return Shape(TUPLE, tuple_shapes=tuple(elements)), pos + 1
        raise TextSyntaxError("expected ',' or ')' in tuple shape", pos)


def _parse_layout(text: str, pos: int, rank: int) -> tuple[Layout, int]:
    close = _layout_end(text, pos)
    body = text[pos + 1 : close]
    order_text, _, items_text = body.partition(":")
    try:
        order = tuple(int(x) for x in order_text.split(",")) if order_text.strip() else ()
    except ValueError:
        raise TextSyntaxError(f"bad minor-to-major order '{order_text}'", pos + 1) from None
    if order and sorted(order) != list(range(rank)):
        raise TextSyntaxError(f"layout {{{order_text}}} does not fit rank {rank}", pos + 1)
    layout = _layout_from_items(order, items_text, pos + 2 + len(order_text))
    return layout, close + 1


def _layout_end(text: str, pos: int) -> int:
    depth = 0
    for i in range(pos, len(text)):
        char = text[i]
        if char in "{(":
            depth += 1
        elif char in "})":
            depth -= 1
            if depth == 0:
                if char != "}":
                    break
                return i
    raise TextSyntaxError("unterminated layout", pos)


def _layout_from_items(order: tuple[int, ...], items: str, offset: int) -> Layout:
    tiles: tuple[tuple[int, ...], ...] = ()
    element_bits = memory_space = 0
    tail_padding = 1
    extra: list[str] = []
    position = 0
    for match in _LAYOUT_ITEM.finditer(items):
        if items[position : match.start()].strip():
            raise TextSyntaxError("bad layout item", offset + position)
        position = match.end()
        kind, args = match.group(1), match.group(2)
        if kind == "T":
            tiles = _parse_tiles(args, offset + match.start(2))
        elif kind == "P":  # XLA's ParseShape: a physical shape is for sparse arrays only
            raise TextSyntaxError("layout has a physical shape P(...), but is not for a sparse "
                                  "array", offset + match.start())
        elif kind == "D":
            _check_dim_level_types(args, offset + match.start(2))
        elif kind in ("E", "S", "L"):
            value = _single_int(args, offset + match.start(2))
            if kind == "E":
                element_bits = value
            elif kind == "S":
                memory_space = value
            else:
                tail_padding = value
        else:
            extra.append(match.group())
    if items[position:].strip():
        raise TextSyntaxError("bad layout item", offset + position)
    return Layout(order, tiles, element_bits, memory_space, tail_padding, tuple(extra))


def _check_dim_level_types(args: str, offset: int) -> None:
    """`D(D,C+,S~)`: each item one of XLA's abbreviations (dense, compressed, singleton, loose
    compressed), optionally non-unique (+) and unordered (~)."""
    for item in args.strip()[1:-1].split(","):
        if not _DIM_LEVEL_TYPE.fullmatch(item.strip()):
            raise TextSyntaxError(f"expected a DimLevelType abbreviation (D, C, or S), got "
                                  f"'{item.strip()}'", offset)


def _parse_tiles(args: str, offset: int) -> tuple[tuple[int, ...], ...]:
    tiles = []
    for group in re.findall(r"\(([^()]*)\)", args):
        try:
            tiles.append(tuple(COMBINED_TILE_DIM if d.strip() == "*" else int(d)
                               for d in group.split(",")))
        except ValueError:
            raise TextSyntaxError(f"bad tile ({group})", offset) from None
    return tuple(tiles)


def _single_int(args: str, offset: int) -> int:
    try:
        return int(args.strip("()"))
    except ValueError:
        raise TextSyntaxError(f"expected an integer in {args}", offset) from None
