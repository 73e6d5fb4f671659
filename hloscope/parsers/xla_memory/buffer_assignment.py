"""XLA's `*-buffer-assignment.txt` (BufferAssignment::ToString): every allocation and its values.

    BufferAssignment:
    allocation 0: size 262144, parameter 29, shape |f32[512,128]| at ShapeIndex {}, maybe-live-out:
     value: <3620 state_master.1 @0> (size=262144,offset=0): f32[512,128]{1,0}
    allocation 352: size 21353028, preallocated-temp:
    allocation 335: size 112608256, color 1, preallocated-temp:

Header flags, in XLA's order: `color N` (omitted for 0), `parameter N, shape |S| at ShapeIndex
{i}` (entry parameters), `output shape is |S|` (the entry root), `constant`, `thread-local`,
`maybe-live-out`, `preallocated-temp` (temporaries; one combined allocation per color). Flags this
reader does not know are kept verbatim. A value is `<id name{index} (phi) @color>`: the index is
printed only when the instruction's shape is a tuple, `@color` may be absent; `size` and `offset`
are within the allocation (offset + size <= allocation size, as XLA checks) and the shape carries
its layout, TPU tiles included (`{1,0:T(8,128)S(1)}`), so sizes are padded sizes.

Since XLA 0.10 the `Total bytes used` / `Used values` part is a separate file
(`*-buffer-assignment-values.txt`); older single-file dumps carry it at the end. Both are read.
The text has no aliasing flag for parameters: see `BufferAllocation.is_aliased_parameter`.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from hloscope.model.xla_memory import AssignedValue, BufferAllocation, BufferAssignment
from hloscope.parsers.xla_memory.buffer_values import parse_values_section
from hloscope.parsers.xla_memory.reading import error_at, read_text, shape_index

HEADER = "BufferAssignment:"
_ALLOCATION = re.compile(r"^allocation (\d+): size (\d+)(.*):$")
_VALUE = re.compile(
    r"^ value: <(?P<id>\d+) (?P<name>[^\s<>{}]+)(?P<index>\{[\d,]*\})?(?P<phi> \(phi\))?"
    r"(?: @(?P<color>\d+))?> \(size=(?P<size>\d+),offset=(?P<offset>\d+)\): (?P<shape>.*)$")
_FLAGS = (
    ("color", re.compile(r", color (\d+)")),
    ("page", re.compile(r", page (\d+)(?=,|$)")),
    ("parameter", re.compile(r", parameter (\d+), shape \|([^|]*)\| at ShapeIndex (\{[\d, ]*\})")),
    ("output", re.compile(r", output shape is \|([^|]*)\|")),
    ("constant", re.compile(r", constant(?=,|$)")),
    ("thread_local", re.compile(r", thread-local(?=,|$)")),
    ("live_out", re.compile(r", maybe-live-out(?=,|$)")),
    ("temp", re.compile(r", preallocated-temp(?=,|$)")),
    ("other", re.compile(r", ([^,]+)")),
)
_VALUES_START = ("Total bytes used:", "Used values:")


def read_buffer_assignment(path: str | Path, values_path: str | Path | None = None,
                           ) -> BufferAssignment:
    """Reads a `*-buffer-assignment.txt` (and, if given, its `-values.txt` companion)."""
    values = None if values_path is None else (read_text(values_path), str(values_path))
    return parse_buffer_assignment(read_text(path), str(path), values)


def parse_buffer_assignment(text: str, source: str = "<text>",
                            values: tuple[str, str] | None = None) -> BufferAssignment:
    """Parses the text; `values` is (text, source) of a `-buffer-assignment-values.txt`."""
    lines = text.splitlines()
    first = _first_content_line(lines)
    if first is None or lines[first] != HEADER:
        number = (first or 0) + 1
        raise error_at(f"expected `{HEADER}`: is this an XLA buffer-assignment dump?", source,
                       number, lines[first] if first is not None else "")
    allocations, end = _allocations(lines, first + 1, source)
    total, details = parse_values_section(lines, end, source)
    if values is not None:
        total, details = parse_values_section(values[0].splitlines(), 0, values[1])
    return BufferAssignment(tuple(allocations), source, total, details)


def _first_content_line(lines: Sequence[str]) -> int | None:
    return next((i for i, line in enumerate(lines) if line.strip()), None)


def _allocations(lines: Sequence[str], number: int, source: str,
                 ) -> tuple[list[BufferAllocation], int]:
    allocations: list[BufferAllocation] = []
    values: list[AssignedValue] = []
    while number < len(lines):
        line = lines[number]
        if line.startswith(_VALUES_START):
            break
        if line.startswith("allocation "):
            _close(allocations, values, source, lines)
            allocations.append(_allocation(line, number + 1, source))
            values = []
        elif line.startswith(" value: "):
            if not allocations:
                raise error_at("a value before any allocation", source, number + 1, line)
            values.append(_value(line, number + 1, source))
        elif line.strip():
            raise error_at("expected `allocation N: size S...:` or ` value: <...>`", source,
                           number + 1, line)
        number += 1
    _close(allocations, values, source, lines)
    return allocations, number


def _close(allocations: list[BufferAllocation], values: list[AssignedValue], source: str,
           lines: Sequence[str]) -> None:
    """Attaches the values read to the last allocation, checking they fit in it."""
    if not allocations:
        return
    allocation = allocations[-1]
    for offset, value in enumerate(values, 1):
        if value.offset + value.size > allocation.size:
            number = (allocation.line or 0) + offset
            raise error_at(f"value {value.key} (offset {value.offset}, size {value.size}) does "
                           f"not fit in allocation {allocation.index} of size {allocation.size}",
                           source, number, lines[number - 1], lines[number - 1].find("(size=") + 1)
    allocations[-1] = replace(allocation, values=tuple(values))


def _allocation(line: str, number: int, source: str) -> BufferAllocation:
    match = _ALLOCATION.match(line)
    if not match:
        raise error_at("expected `allocation N: size S[, flags]:`", source, number, line)
    fields: dict[str, object] = {"index": int(match.group(1)), "size": int(match.group(2)),
                                 "line": number}
    flags = match.group(3)
    position = 0
    other: list[str] = []
    while position < len(flags):
        name, flag = _flag(flags, position)
        if flag is None:
            column = match.start(3) + position + 1
            raise error_at("expected `, flag` in the allocation header", source, number, line,
                           column)
        _apply_flag(fields, other, name, flag)
        position = flag.end()
    return BufferAllocation(**fields, other_flags=tuple(other))  # type: ignore[arg-type]


def _flag(flags: str, position: int) -> tuple[str, re.Match[str] | None]:
    for name, pattern in _FLAGS:
        found = pattern.match(flags, position)
        if found:
            return name, found
    return "", None


def _apply_flag(fields: dict[str, object], other: list[str], name: str,
                flag: re.Match[str]) -> None:
    if name in ("color", "page"):
        fields[name] = int(flag.group(1))
    elif name == "parameter":
        fields.update(parameter_number=int(flag.group(1)), parameter_shape=flag.group(2),
                      parameter_shape_index=shape_index(flag.group(3)))
    elif name == "output":
        fields["output_shape"] = flag.group(1)
    elif name == "other":
        other.append(flag.group(1).strip())
    else:
        key = {"constant": "is_constant", "thread_local": "is_thread_local",
               "live_out": "maybe_live_out", "temp": "is_preallocated_temp"}[name]
        fields[key] = True


def _value(line: str, number: int, source: str) -> AssignedValue:
    match = _VALUE.match(line)
    if not match:
        raise error_at("expected ` value: <id name @color> (size=S,offset=O): shape`", source,
                       number, line, 9)
    return AssignedValue(
        id=int(match["id"]), instruction=match["name"],
        shape_index=shape_index(match["index"]) if match["index"] else (),
        offset=int(match["offset"]), size=int(match["size"]), shape=match["shape"],
        color=int(match["color"]) if match["color"] else None, is_phi=bool(match["phi"]))
