"""XLA's `*-live-range.txt` (HloLiveRange::ToString, xla/hlo/utils/hlo_live_range.cc).

    HloLiveRange (max 538):
      InstructionSequence:
        0:state_params__embed____positions__.1          position:instruction, flattened
      BufferLiveRange:
        copy.142{}:119-521                              value{index}:start-end, inclusive
      Live ranges at 244 (peak):
        convert_bitcast_fusion.15{}: 1048576 bytes (cumulative: 1048576 bytes)
      Stack trace breakdown for peak usage: 27 108 624 bytes
        main.97 (100.0%, total: 27 108 624 bytes, ...)  see stack_tree.py

The schedule is the module's flattened sequence (called computations inlined where they run).
Entry parameters that are not aliased live to `max`; root values to the end of their
computation. The peak is the first position where the sum of live values is largest, and the
values listed there use ShapeUtil::ByteSizeOf of the logical shape (no TPU tile padding), sorted
by size then name: that is XLA's *live peak*, not the allocation. Older XLA printed the peak list
as `name: N bytes` (no index, no cumulative) and no tree; byte counts may be digit-grouped by
spaces as the tree's are; when shapes are unbounded-dynamic the
peak part is `Peak memory could not be determined ...` instead. All variants are read.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from hloscope.model.xla_memory import LiveInterval, LiveRangeDump, PeakValue, StackNode
from hloscope.parsers.xla_memory.reading import error_at, read_text, shape_index, spaced_int
from hloscope.parsers.xla_memory.stack_tree import HEADER, parse_header, parse_tree

_HEADER = re.compile(r"^HloLiveRange \(max (\d+)\):$")
_SEQUENCE_ITEM = re.compile(r"^    (\d+):(.+)$")
_INTERVAL = re.compile(
    r"^    (?P<name>[^\s{}]+)(?P<index>\{[\d,]*\})?:(?P<start>\d+)-(?P<end>\d+)$")
_PEAK = re.compile(r"^  Live ranges at (-?\d+) \(peak\):$")
_NUMBER = r"\d+(?: \d{3})*"  # 1048576 or, as newer XLA prints it, 1 048 576
_PEAK_ITEM = re.compile(rf"^    (?P<name>[^\s{{}}]+)(?P<index>\{{[\d,]*\}})?: (?P<bytes>{_NUMBER}) "
                        rf"bytes(?: \(cumulative: (?P<cumulative>{_NUMBER}) bytes\))?$")
_UNDETERMINED = "  Peak memory could not be determined"


def read_live_range(path: str | Path) -> LiveRangeDump:
    return parse_live_range(read_text(path), str(path))


def parse_live_range(text: str, source: str = "<text>") -> LiveRangeDump:
    lines = text.splitlines()
    header = _HEADER.match(lines[0]) if lines else None
    if header is None:
        raise error_at("expected `HloLiveRange (max N):`: is this an XLA live-range dump?",
                       source, 1, lines[0] if lines else "")
    number = _expect(lines, 1, "  InstructionSequence:", source)
    sequence, number = _sequence(lines, number, source)
    number = _expect(lines, number, "  BufferLiveRange:", source)
    intervals, number = _intervals(lines, number, source)
    peak_time, peak_values, number = _peak(lines, number, source)
    stack_total, stack, number = _stack(lines, number, source)
    _expect_end(lines, number, source)
    return LiveRangeDump(int(header.group(1)), tuple(sequence), tuple(intervals), peak_time,
                         tuple(peak_values), stack_total, stack, source)


def _expect(lines: Sequence[str], number: int, wanted: str, source: str) -> int:
    if number >= len(lines) or lines[number] != wanted:
        raise error_at(f"expected `{wanted.strip()}`", source, number + 1,
                       lines[number] if number < len(lines) else "")
    return number + 1


def _sequence(lines: Sequence[str], number: int, source: str) -> tuple[list[str], int]:
    sequence: list[str] = []
    while number < len(lines) and lines[number].startswith("    "):
        match = _SEQUENCE_ITEM.match(lines[number])
        if not match or int(match.group(1)) != len(sequence):
            raise error_at(f"expected `{len(sequence)}:instruction`", source, number + 1,
                           lines[number], 5)
        sequence.append(match.group(2))
        number += 1
    return sequence, number


def _intervals(lines: Sequence[str], number: int, source: str,
               ) -> tuple[list[LiveInterval], int]:
    intervals: list[LiveInterval] = []
    while number < len(lines) and lines[number].startswith("    "):
        match = _INTERVAL.match(lines[number])
        if not match or int(match["start"]) > int(match["end"]):
            raise error_at("expected `value{index}:start-end` with start <= end", source,
                           number + 1, lines[number], 5)
        index = shape_index(match["index"]) if match["index"] else ()
        intervals.append(LiveInterval(match["name"], index, int(match["start"]),
                                      int(match["end"])))
        number += 1
    return intervals, number


def _peak(lines: Sequence[str], number: int, source: str,
          ) -> tuple[int | None, list[PeakValue], int]:
    if number >= len(lines) or lines[number].startswith(_UNDETERMINED):
        return None, [], number + 1
    match = _PEAK.match(lines[number])
    if not match:
        raise error_at("expected `Live ranges at N (peak):`", source, number + 1, lines[number])
    values: list[PeakValue] = []
    number += 1
    while number < len(lines) and lines[number].startswith("    "):
        values.append(_peak_value(lines[number], number + 1, source, values))
        number += 1
    return int(match.group(1)), values, number


def _peak_value(line: str, number: int, source: str, before: list[PeakValue]) -> PeakValue:
    match = _PEAK_ITEM.match(line)
    if not match:
        raise error_at("expected `value{index}: N bytes (cumulative: N bytes)`", source, number,
                       line, 5)
    size = spaced_int(match["bytes"])
    running = (before[-1].cumulative_bytes if before else 0) + size
    if match["cumulative"] is not None and spaced_int(match["cumulative"]) != running:
        raise error_at(f"cumulative bytes should be {running} (the sum of the sizes so far)",
                       source, number, line, line.find("(cumulative") + 1)
    index = shape_index(match["index"]) if match["index"] else None
    return PeakValue(match["name"], index, size, running)


def _stack(lines: Sequence[str], number: int, source: str,
           ) -> tuple[int | None, tuple[StackNode, ...], int]:
    if number >= len(lines) or not lines[number].startswith(HEADER):
        return None, (), number
    total = parse_header(lines[number], number + 1, source)
    nodes, number = parse_tree(lines, number + 1, source)
    return total, nodes, number


def _expect_end(lines: Sequence[str], number: int, source: str) -> None:
    for offset, line in enumerate(lines[number:]):
        if line.strip():
            raise error_at("unexpected text after the live-range dump", source,
                           number + offset + 1, line)
