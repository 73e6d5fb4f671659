"""The module header's `input_output_alias` and `buffer_donor`, read as XLA's parser reads them.

    input_output_alias={ {0}: (0, {}, may-alias), {1}: 1 }   output index: (param, index[, kind])
    buffer_donor={ (0, {}), (1, {0}) }                        (param, index)

XLA refuses any other form ("Expected format: ..."), an aliasing kind other than may-alias or
must-alias, and an output index the entry's result shape does not have (a RET_CHECK in
HloInputOutputAliasConfig). Parameter numbers are not checked: XLA's parser does not either.
"""
from __future__ import annotations

import re

from hloscope.errors import ParseError
from hloscope.model.module import HloModule
from hloscope.model.scan import split_top_level
from hloscope.model.shape import Shape
from hloscope.model.shape_text import TextSyntaxError

_INDEX = r"\{\s*(?:\d+\s*(?:,\s*\d+\s*)*)?\}"
_ALIAS_ENTRY = re.compile(
    rf"\s*({_INDEX})\s*:\s*(?:\d+|\(\s*\d+\s*,\s*{_INDEX}\s*(?:,\s*([\w-]+)\s*)?\))\s*")
_DONOR_ENTRY = re.compile(rf"\s*\(\s*\d+\s*,\s*{_INDEX}\s*\)\s*")
_ALIAS_KINDS = ("may-alias", "must-alias")


def check_aliasing(module: HloModule) -> None:
    """Raises a located ParseError at the first malformed alias or donor entry."""
    for key, entry in (("input_output_alias", _ALIAS_ENTRY), ("buffer_donor", _DONOR_ENTRY)):
        offset = _value_offset(module, key)
        if offset >= 0:
            _check_entries(module, key, entry, offset)


def _value_offset(module: HloModule, key: str) -> int:
    if module.raw_attribute(key) is None:
        return -1
    match = re.search(rf"[,\s]{re.escape(key)}\s*=\s*", module.header_text)
    return match.end() if match else -1


def _check_entries(module: HloModule, key: str, entry: re.Pattern[str], offset: int) -> None:
    text = module.header_text
    raw = module.raw_attribute(key) or ""
    if not raw.startswith("{") or not raw.endswith("}"):
        raise _error(module, f"{key}: expected '{{...}}'", offset)
    result = _entry_result(module)
    try:
        items = split_top_level(text, offset + 1, offset + len(raw) - 1)
    except TextSyntaxError as error:
        raise _error(module, f"{key}: {error.message}", error.offset) from None
    for start, end in items:
        match = entry.fullmatch(text, start, end)
        if match is None:
            form = ("<output_shape_index>: (<input_param>, <input_param_shape_index>[, kind])"
                    if key == "input_output_alias" else
                    "(<input_param>, <input_param_shape_index>)")
            raise _error(module, f"{key}: expected format {form}", start)
        if key == "input_output_alias":
            _check_alias(module, match, result)


def _check_alias(module: HloModule, match: re.Match[str], result: Shape | None) -> None:
    kind = match.group(2)
    if kind is not None and kind not in _ALIAS_KINDS:
        raise _error(module, f"input_output_alias: unexpected aliasing kind '{kind}'; expected "
                     "may-alias or must-alias", match.start(2))
    index = tuple(int(i) for i in re.findall(r"\d+", match.group(1)))
    if result is not None and not _has_index(result, index):
        raise _error(module, f"input_output_alias: output index {{{','.join(map(str, index))}}} "
                     f"is not in the entry's result shape {result}", match.start(1))


def _entry_result(module: HloModule) -> Shape | None:
    """The entry's result shape, from its ROOT (None when it cannot be read)."""
    try:
        return module.entry.root.shape
    except (ParseError, KeyError, IndexError):
        return None


def _has_index(shape: Shape, index: tuple[int, ...]) -> bool:
    for i in index:
        if not shape.is_tuple or i >= len(shape.tuple_shapes):
            return False
        shape = shape.tuple_shapes[i]
    return True


def _error(module: HloModule, message: str, offset: int) -> ParseError:
    return ParseError.in_text(f"module header: {message}", module.source, module.header_text,
                              module.line, offset)
