"""The `Used values` part of a buffer-assignment dump (BufferAssignment::ValuesToString).

XLA 0.10-era dumps write it to its own file, `*-buffer-assignment-values.txt`; older XLA appended
it to `*-buffer-assignment.txt`. Format:

    Total bytes used: 27946340 (26.65MiB)

    Used values:
    <23 x.1 @0>                         <id name{index} (phi) @color>; {index} only for tuples
     positions:
      x.1                               `name` or `name {0}`
     uses:
      dot, operand 0                    `name, operand N` or `name, operand N {1}`; `(none)`
     from instruction: %x.1 = f32[64,256]{1,0} parameter(2), ...

`Total bytes used` is the sum of every allocation's size, the same figure as the usage
report's per-space totals added up. The instruction's text after `from instruction:` may span
lines: a Pallas kernel's custom call (`tpu_custom_call`) carries a raw newline inside its
backend config (splash attention's `"xprof_metadata"`); lines that start neither with a space
nor a value header continue the definition.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from hloscope.errors import ParseError
from hloscope.model.xla_memory import ShapeIndex, ValueDetail, ValueUse
from hloscope.parsers.xla_memory.reading import error_at, shape_index

VALUE_HEADER = re.compile(
    r"^<(?P<id>\d+) (?P<name>[^\s<>{}]+)(?P<index>\{[\d,]*\})?(?P<phi> \(phi\))?"
    r"(?: @(?P<color>\d+))?>$")
_TOTAL = re.compile(r"^Total bytes used: (\d+)(?: \(.*\))?$")
_POSITION = re.compile(r"^  (?P<name>[^\s,{}]+)(?: (?P<index>\{[\d, ]*\}))?$")
_USE = re.compile(r"^  (?P<name>[^\s,{}]+), operand (?P<number>\d+)(?: (?P<index>\{[\d, ]*\}))?$")
_DEFINITION = " from instruction: "


def parse_values_section(lines: Sequence[str], start: int, source: str,
                         ) -> tuple[int | None, tuple[ValueDetail, ...]]:
    """(`Total bytes used`, value details) from `lines[start:]`, 0-based `start`."""
    total: int | None = None
    details: list[ValueDetail] = []
    number = start
    while number < len(lines):
        line = lines[number]
        if not line.strip() or line == "Used values:":
            number += 1
        elif match := _TOTAL.match(line):
            total, number = int(match.group(1)), number + 1
        elif VALUE_HEADER.match(line):
            detail, number = _value_block(lines, number, source)
            details.append(detail)
        else:
            raise error_at("expected `Total bytes used:`, `Used values:` or a value `<id name>`",
                           source, number + 1, line)
    return total, tuple(details)


def _value_block(lines: Sequence[str], number: int, source: str) -> tuple[ValueDetail, int]:
    header = VALUE_HEADER.match(lines[number])
    assert header is not None
    positions: list[tuple[str, ShapeIndex]] = []
    uses: list[ValueUse] = []
    definition = ""
    section = ""
    number += 1
    while number < len(lines) and lines[number].startswith(" "):
        line = lines[number]
        if line in (" positions:", " uses:"):
            section = line.strip(" :")
        elif line.startswith(_DEFINITION):
            definition, number = _definition(lines, number)
            continue
        elif section == "positions":
            positions.append(_position(line, source, number))
        elif section == "uses":
            uses.extend(_use(line, source, number))
        else:
            raise error_at("expected ` positions:`, ` uses:` or ` from instruction:`", source,
                           number + 1, line)
        number += 1
    detail = ValueDetail(
        id=int(header["id"]), instruction=header["name"],
        shape_index=shape_index(header["index"]) if header["index"] else (),
        positions=tuple(positions), uses=tuple(uses), definition=definition,
        color=int(header["color"]) if header["color"] else None, is_phi=bool(header["phi"]))
    return detail, number


def _definition(lines: Sequence[str], number: int) -> tuple[str, int]:
    """The instruction text of ` from instruction: ...` at `number` with its continuation
    lines, and the number of the line after it."""
    parts = [lines[number][len(_DEFINITION):]]
    number += 1
    while number < len(lines) and _continues(lines[number]):
        parts.append(lines[number])
        number += 1
    return "\n".join(parts), number


def _continues(line: str) -> bool:
    return bool(line.strip()) and not line.startswith(" ") and not VALUE_HEADER.match(line) \
        and not _TOTAL.match(line) and line != "Used values:"


def _position(line: str, source: str, number: int) -> tuple[str, ShapeIndex]:
    match = _POSITION.match(line)
    if not match:
        raise _bad(line, source, number, "a position `name` or `name {index}`")
    return match["name"], shape_index(match["index"]) if match["index"] else ()


def _use(line: str, source: str, number: int) -> list[ValueUse]:
    if line.strip() == "(none)":
        return []
    match = _USE.match(line)
    if not match:
        raise _bad(line, source, number, "a use `name, operand N`")
    index = shape_index(match["index"]) if match["index"] else ()
    return [ValueUse(match["name"], int(match["number"]), index)]


def _bad(line: str, source: str, number: int, wanted: str) -> ParseError:
    column = len(line) - len(line.lstrip()) + 1
    return error_at(f"expected {wanted}", source, number + 1, line, column)
