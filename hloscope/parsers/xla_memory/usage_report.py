"""XLA's `*-memory-usage-report.txt` (BufferAssignment::MemoryUsageReport, XLA 0.10 era).

    Memory Space: default (color=0)
    Total bytes: 27946340 (26.65MiB)
      cumulative_size;       size;       offset; used_by_n_values; shapes_list
      ------------------------------------------------------------
        1.00MiB(  4%);    1.00MiB;      4194304;                1; f32[8,64,512]
      The rest 29 values are less than 5% of the total size and not shown.

    Memory Space: vmem (color=1)
    ...

One section per color, in color order, named by the backend (`default`; TPU adds `vmem`, `smem`,
`color_6`, ...). `Total bytes` is the sum of the sizes of every allocation of that color. Then one
table per allocation, largest first (ties by index), until 50 tables have been printed and the
rest is under 5% of the total; XLA prints no allocation index (`label_tables` restores it from the
buffer assignment). A table has one row per offset: the largest value there (`size`, human
readable), the count of values sharing it and their shapes (`2×f32[512,128]`); rows are sorted by
size and cut the same way (`The rest N values` counts offsets, not values). Rows of one table do
not add up to the allocation: values at different offsets can overlap in time-sliced ways.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from hloscope.model.xla_memory import (
    BufferAssignment,
    MemorySpaceUsage,
    MemoryUsageReport,
    UsageRow,
    UsageTable,
)
from hloscope.parsers.xla_memory.reading import error_at, read_text

_SPACE = re.compile(r"^Memory Space: (?P<name>.+) \(color=(?P<color>-?\d+)\)$")
_TOTAL = re.compile(r"^Total bytes: (?P<total>\d+)(?: \(.*\))?$")
_COLUMNS = re.compile(r"^\s+cumulative_size;\s+size;\s+offset;\s+used_by_n_values;\s+shapes_list$")
_RULE = re.compile(r"^\s+-{10,}$")
_ROW = re.compile(
    r"^\s+(?P<cumulative>\S+)\(\s*(?P<percent>\d+|-?nan|inf)%\);\s+(?P<size>\S+);"
    r"\s+(?P<offset>\d+);\s+(?P<count>\d+); ?(?P<shapes>.*)$")
_REST = re.compile(r"^\s+The rest (\d+) values are less than \d+% of the total size and not "
                   r"shown\.$")
_COUNTED = re.compile(r"^(\d+)×(.+)$")


def read_usage_report(path: str | Path) -> MemoryUsageReport:
    return parse_usage_report(read_text(path), str(path))


def parse_usage_report(text: str, source: str = "<text>") -> MemoryUsageReport:
    lines = text.splitlines()
    spaces: list[MemorySpaceUsage] = []
    number = 0
    while number < len(lines):
        if not lines[number].strip():
            number += 1
            continue
        space, number = _space(lines, number, source)
        spaces.append(space)
    if not spaces:
        raise error_at("expected `Memory Space: NAME (color=N)`: is this an XLA memory-usage "
                       "report?", source, 1, lines[0] if lines else "")
    return MemoryUsageReport(tuple(spaces), source)


def label_tables(report: MemoryUsageReport, assignment: BufferAssignment) -> MemoryUsageReport:
    """The report with each table's `allocation_index`: tables follow the allocations of their
    color by size (largest first), then index, as XLA sorts them."""
    spaces = []
    for space in report.spaces:
        ordered = sorted((a for a in assignment.allocations if a.color == space.color),
                         key=lambda a: (-a.size, a.index))
        tables = tuple(replace(table, allocation_index=allocation.index)
                       for table, allocation in zip(space.tables, ordered, strict=False))
        spaces.append(replace(space, tables=tables))
    return replace(report, spaces=tuple(spaces))


def _space(lines: Sequence[str], number: int, source: str) -> tuple[MemorySpaceUsage, int]:
    header = _SPACE.match(lines[number])
    if not header:
        raise error_at("expected `Memory Space: NAME (color=N)`", source, number + 1,
                       lines[number])
    total = _TOTAL.match(lines[number + 1]) if number + 1 < len(lines) else None
    if not total:
        raise error_at("expected `Total bytes: N (human)`", source, number + 2,
                       lines[number + 1] if number + 1 < len(lines) else "")
    tables: list[UsageTable] = []
    number += 2
    while number < len(lines) and not lines[number].startswith("Memory Space:"):
        if not lines[number].strip():
            number += 1
            continue
        table, number = _table(lines, number, source)
        tables.append(table)
    usage = MemorySpaceUsage(header["name"], int(header["color"]), int(total["total"]),
                             tuple(tables))
    return usage, number


def _table(lines: Sequence[str], number: int, source: str) -> tuple[UsageTable, int]:
    if not _COLUMNS.match(lines[number]):
        raise error_at("expected the column header `cumulative_size; size; offset; "
                       "used_by_n_values; shapes_list`", source, number + 1, lines[number])
    start = number + 1
    if number + 1 >= len(lines) or not _RULE.match(lines[number + 1]):
        raise error_at("expected a `-----` rule under the column header", source, number + 2,
                       lines[number + 1] if number + 1 < len(lines) else "")
    rows: list[UsageRow] = []
    hidden = 0
    number += 2
    while number < len(lines) and lines[number].strip():
        rest = _REST.match(lines[number])
        if rest:
            hidden = int(rest.group(1))
        else:
            rows.append(_row(lines[number], number + 1, source))
        number += 1
    return UsageTable(tuple(rows), hidden, None, start), number


def _row(line: str, number: int, source: str) -> UsageRow:
    match = _ROW.match(line)
    if not match:
        raise error_at("expected `cumulative(P%); size; offset; count; shapes`", source, number,
                       line, len(line) - len(line.lstrip()) + 1)
    percent = match["percent"]
    return UsageRow(match["cumulative"], int(percent) if percent.isdigit() else None,
                    match["size"], int(match["offset"]), int(match["count"]),
                    _shapes(match["shapes"]))


def _shapes(text: str) -> tuple[tuple[int, str], ...]:
    """`f32[8], 2×f32[512,128], (s32[], f32[2,3])` -> ((1, ...), (2, ...), (1, ...))."""
    shapes = []
    for item in _split_top_level(text):
        counted = _COUNTED.match(item)
        shapes.append((int(counted.group(1)), counted.group(2)) if counted else (1, item))
    return tuple(shapes)


def _split_top_level(text: str) -> list[str]:
    items, depth, start = [], 0, 0
    for position, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(text[start:position].strip())
            start = position + 1
    tail = text[start:].strip()
    return [item for item in [*items, tail] if item]
