"""Attribute values of HLO instructions and module headers, parsed on demand.

The text parser keeps each instruction's attribute text verbatim; these functions turn a value into
what analyses need: integer lists, windows, convolution dimension labels, computation names,
metadata, backend_config JSON (strict or with XLA's relaxed unquoted keys) and frontend attributes.
Every function raises TextSyntaxError with an offset into the value it was given.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from hloscope._native import scan as native
from hloscope.model.scan import split_top_level
from hloscope.model.shape_text import TextSyntaxError

_KEY = re.compile(r"\s*([A-Za-z_][\w.\-]*)\s*=\s*")
_INT = re.compile(r"-?\d+")
_QUOTED = r'"[^"\\]*(?:\\.[^"\\]*)*"'


def _braced(depth: int) -> str:
    """A `{...}` block nested up to `depth` levels, braces inside string literals ignored."""
    inner = rf'{_QUOTED}|[^{{}}"]' + (f"|{_braced(depth - 1)}" if depth > 1 else "")
    return rf"\{{(?:{inner})*\}}"


# A value is a string literal, a braced block (a Pallas kernel's `kernel_metadata={"k":"v"}`;
# libtpu's `_xla_megascale_target={{100000,300000},...}`, which XLA prints unquoted) or a bare
# word.
_META_ITEM = re.compile(rf'\s*([A-Za-z_][\w.\-]*)=({_QUOTED}|{_braced(3)}|[^\s}}]+)')
_ESCAPE = re.compile(rb"\\(?:([0-7]{1,3})|x([0-9a-fA-F]{2})|(.))", re.S)
_SIMPLE_ESCAPES = {b"n": b"\n", b"t": b"\t", b"r": b"\r", b"\\": b"\\", b'"': b'"', b"'": b"'"}


def _nested(depth: int) -> str:
    """A bracketed block, `{}`, `[]` or `()` properly nested up to `depth` levels, with string
    literals (no line break, as scan.py reads them) and no `/` outside them (a comment)."""
    inner = r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"|[^{}()\[\]"/]' + (
        f"|{_nested(depth - 1)}" if depth > 1 else "")
    return "|".join(rf"\{open_}(?:{inner})*\{close}" for open_, close in ("{}", "[]", "()"))


# One `key=value` followed by `,` or the end, its value a string, a bare word or a nested block:
# when every item matches, the split is the one split_top_level makes, found by one regex each.
_SIMPLE_ITEM = re.compile(
    r'\s*([A-Za-z_][\w.\-]*)\s*=\s*("[^"\\\n]*(?:\\.[^"\\\n]*)*"|[^\s,{}()\[\]"/]+|'
    + _nested(4) + r")\s*(,|\Z)")

_SIMPLE_LIMIT = 4096


def split_attributes(text: str, start: int = 0) -> dict[str, tuple[int, int]]:
    """Maps each `key=value` of a `, key=value, ...` list to the (start, end) of its value."""
    simple = _split_simple(text, start)
    if simple is not None:
        return simple
    if native is not None:  # the same spans where nothing below raises; None: read them here
        found = native.split_general(text, start)
        if found is not None:
            return found
    attributes: dict[str, tuple[int, int]] = {}
    for item_start, item_end in split_top_level(text, start):
        match = _KEY.match(text, item_start, item_end)
        if not match:
            if not text[item_start:item_end].strip():
                raise TextSyntaxError("empty attribute", item_start)
            raise TextSyntaxError("expected attribute 'name=value'", _first_char(text, item_start))
        if match.end() >= item_end or not text[match.end() : item_end].strip():
            raise TextSyntaxError(f"attribute '{match.group(1)}' has no value", match.end())
        attributes[match.group(1)] = (match.end(), _rstrip_end(text, item_end))
    return attributes


def _split_simple(text: str, start: int) -> dict[str, tuple[int, int]] | None:
    """split_attributes for lists whose every item is _SIMPLE_ITEM; None for any other, and for
    a long list (a module header's): the regex engine's backtracking stack grows with a nested
    value's length, megabytes for a header's input_output_alias. The C accelerator gives the same
    result for the lists it reads (None where it declines one: the regex then decides)."""
    if len(text) - start > _SIMPLE_LIMIT:
        return None
    if native is not None:
        found = native.split_simple(text, start)
        if found is not None:
            return found
    attributes: dict[str, tuple[int, int]] = {}
    match = _SIMPLE_ITEM.match
    end = len(text)
    position = start
    while True:
        item = match(text, position)
        if item is None:
            return None
        attributes[item.group(1)] = item.span(2)
        position = item.end()
        if not item.group(3):
            return attributes if position == end else None


def _first_char(text: str, pos: int) -> int:
    return pos + len(text[pos:]) - len(text[pos:].lstrip())


def _rstrip_end(text: str, end: int) -> int:
    while end > 0 and text[end - 1].isspace():
        end -= 1
    return end


def int_list(value: str) -> tuple[int, ...]:
    """`{1,2}` or `{}` -> (1, 2); a bare integer gives a 1-tuple."""
    body = value.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    if not body.strip():
        return ()
    items = body.split(",")
    if not all(_INT.fullmatch(item.strip()) for item in items):
        raise TextSyntaxError(f"expected a list of integers, got '{value}'", 0)
    return tuple(int(item) for item in items)


def integer(value: str) -> int:
    """`3` -> 3 (what int() reads); anything else is a TextSyntaxError, not a ValueError."""
    try:
        return int(value)
    except ValueError:
        raise TextSyntaxError(f"expected an integer, got '{value.strip()}'", 0) from None


def computation_names(value: str) -> tuple[str, ...]:
    """`%a` or `{%a, %b}` -> ('a', 'b')."""
    body = value.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    return tuple(name.strip().lstrip("%") for name in body.split(",") if name.strip())


@dataclass(frozen=True, slots=True)
class WindowDimension:
    size: int = 1
    stride: int = 1
    padding_low: int = 0
    padding_high: int = 0
    lhs_dilation: int = 1
    rhs_dilation: int = 1
    reversal: bool = False


def window(value: str) -> tuple[WindowDimension, ...]:
    """`{size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=1x1 rhs_dilate=1x1 rhs_reversal=0x0}`."""
    fields: dict[str, list[str]] = {}
    for key, raw in re.findall(r"(\w+)=(\S+?)(?=\s|}|$)", value.strip().strip("{}")):
        fields[key] = raw.split("x")
    rank = max((len(v) for v in fields.values()), default=0)
    dims = []
    for i in range(rank):
        low, high = _pad_pair(fields, i)
        dims.append(WindowDimension(
            size=_window_int(fields, "size", i, 1),
            stride=_window_int(fields, "stride", i, 1),
            padding_low=low,
            padding_high=high,
            lhs_dilation=_window_int(fields, "lhs_dilate", i, 1),
            rhs_dilation=_window_int(fields, "rhs_dilate", i, 1),
            reversal=bool(_window_int(fields, "rhs_reversal", i, 0)),
        ))
    return tuple(dims)


def _window_int(fields: dict[str, list[str]], key: str, i: int, default: int) -> int:
    values = fields.get(key)
    try:
        return int(values[i]) if values else default
    except (ValueError, IndexError):
        raise TextSyntaxError(f"bad window {key}", 0) from None


def _pad_pair(fields: dict[str, list[str]], i: int) -> tuple[int, int]:
    values = fields.get("pad")
    if not values:
        return 0, 0
    low, _, high = values[i].partition("_")
    try:
        return int(low), int(high)
    except ValueError:
        raise TextSyntaxError(f"bad window padding '{values[i]}'", 0) from None


@dataclass(frozen=True, slots=True)
class ConvolutionDimensions:
    """`dim_labels=b01f_01io->b01f`: the role of each dimension of input, kernel and output."""

    input_labels: str
    kernel_labels: str
    output_labels: str

    @property
    def input_batch(self) -> int:
        return self.input_labels.index("b")

    @property
    def input_feature(self) -> int:
        return self.input_labels.index("f")

    @property
    def output_feature(self) -> int:
        return self.output_labels.index("f")

    def spatial(self, labels: str) -> tuple[int, ...]:
        """Positions of the spatial dimensions (labelled 0, 1, 2, ...) in spatial order."""
        numbered = sorted((int(c), i) for i, c in enumerate(labels) if c.isdigit())
        return tuple(i for _, i in numbered)


def dim_labels(value: str) -> ConvolutionDimensions:
    match = re.fullmatch(r"\s*([0-9a-z]+)_([0-9a-z]+)->([0-9a-z]+)\s*", value)
    if not match:
        raise TextSyntaxError(f"bad dim_labels '{value}'", 0)
    return ConvolutionDimensions(*match.groups())


def unquote(value: str) -> str:
    """The content of an XLA string literal, with C escapes decoded (UTF-8 bytes allowed)."""
    body = value.strip()
    if len(body) < 2 or body[0] != '"' or body[-1] != '"':
        return body
    body = body[1:-1]
    if "\\" not in body:
        return body
    return _ESCAPE.sub(_unescape_one, body.encode("utf-8")).decode("utf-8", "replace")


def _unescape_one(match: re.Match[bytes]) -> bytes:
    octal, hexa, char = match.groups()
    if octal:
        return bytes([int(octal, 8) & 0xFF])
    if hexa:
        return bytes([int(hexa, 16)])
    return _SIMPLE_ESCAPES.get(char, char)


def key_values(value: str) -> dict[str, str]:
    """`{op_name="a" source_line=3}` or `{k="v",k2="v2"}` -> {'op_name': 'a', ...}; the C
    accelerator reads the common form (no escapes, no braced values), the same way."""
    if native is not None:
        quick = native.key_values(value)
        if quick is not None:
            return quick
    body = value.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    found: dict[str, str] = {}
    position = 0
    for match in _META_ITEM.finditer(body):
        if body[position : match.start()].strip(" ,\t\n"):
            raise TextSyntaxError("bad key=value item", position)
        found[match.group(1)] = unquote(match.group(2))
        position = match.end()
    if body[position:].strip(" ,\t\n"):
        raise TextSyntaxError("bad key=value item", position)
    return found


_UNQUOTED_KEY = re.compile(r'("(?:[^"\\]|\\.)*")|([{,]\s*)([A-Za-z_][\w]*)(\s*:)')


def backend_config(value: str) -> dict | list | str:
    """backend_config as JSON (`{...}`, `"{...}"` or relaxed unquoted keys), else its raw text."""
    body = value.strip()
    if body.startswith('"'):
        text = unquote(body)
        try:
            return json.loads(text) if text.strip().startswith(("{", "[")) else text
        except json.JSONDecodeError:
            return text  # a string backend_config is opaque to XLA (e.g. an MLIR dictionary)
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        pass
    quoted = _UNQUOTED_KEY.sub(lambda m: m.group(1) or f'{m.group(2)}"{m.group(3)}"{m.group(4)}',
                               body)
    try:
        return json.loads(quoted)
    except json.JSONDecodeError:
        return body  # opaque to XLA too, e.g. a typed-FFI custom call's MLIR dictionary
