"""The memory XLA's own buffer assignment holds for the values live at each moment.

An independent truth for the live peak, read only from XLA's dumps: `*-live-range.txt` says
which values are live at each logical time (inclusive ranges), `*-buffer-assignment.txt` where
each value sits (allocation, offset, size). At a time t the memory held is the union of the
chunks of the values live then: two values at overlapping offsets of one allocation that are
both live at t are one piece of memory (XLA gave an output the buffer of an operand that dies
at t, or the values are one buffer of its alias analysis). Chunks are grouped into *pieces*:
values whose chunks overlap at t.
"""
from __future__ import annotations

from hloscope.model.xla_memory import BufferAssignment, LiveRangeDump

Chunk = tuple[int, int, int]  # allocation index, offset, end


def chunks(assignment: BufferAssignment, colors: set[int] | None = None) -> dict[str, Chunk]:
    """Value key (`name{index}`) -> its chunk, for allocations of the given colors (all if None).
    """
    found = {}
    for allocation in assignment.allocations:
        if colors is not None and allocation.color not in colors:
            continue
        for value in allocation.values:
            found[value.key] = (allocation.index, value.offset, value.offset + value.size)
    return found


def pieces_at(dump: LiveRangeDump, where: dict[str, Chunk], time: int) -> list[list[str]]:
    """The values live at `time`, grouped by overlapping chunks (one group, one piece)."""
    live = sorted((where[key], key) for key, interval in dump.by_key().items()
                  if interval.start <= time <= interval.end and key in where)
    groups: list[list[str]] = []
    end = (-1, -1)
    for (allocation, offset, stop), key in live:
        if groups and (allocation, offset) < end:
            groups[-1].append(key)
            end = max(end, (allocation, stop))
        else:
            groups.append([key])
            end = (allocation, stop)
    return groups


def held_bytes(dump: LiveRangeDump, where: dict[str, Chunk]) -> list[int]:
    """Bytes of memory holding live values at each time 0..max."""
    changes: dict[int, list[tuple[Chunk, int]]] = {}
    for key, interval in dump.by_key().items():
        if key in where:
            changes.setdefault(interval.start, []).append((where[key], 1))
            changes.setdefault(interval.end + 1, []).append((where[key], -1))
    held, counts = [], {}
    for time in range(dump.schedule_end + 1):
        for chunk, step in changes.get(time, ()):
            counts[chunk] = counts.get(chunk, 0) + step
            if not counts[chunk]:
                del counts[chunk]
        held.append(_union(counts))
    return held


def _union(counts: dict[Chunk, int]) -> int:
    total, end = 0, (-1, -1)
    for allocation, offset, stop in sorted(counts):
        start = max((allocation, offset), end) if end[0] == allocation else (allocation, offset)
        if (allocation, stop) > start:
            total += stop - start[1]
            end = (allocation, stop)
    return total
