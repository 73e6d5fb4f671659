"""Bytes live over time, the peak, and the moment XLA's live-range dump calls its peak.

`live_bytes` sums, at every logical time t, the buffers live at t: during instruction t its
operands (last used at t) and its outputs (defined at t) are both live. Values that occupy one
piece of memory have ranges that touch at their ends, and count once there: those of one buffer
(a while loop's carried array passing from the condition's parameter to the body's, an in-place
update) and, by default (`shared=True`), an output made in the buffer of an operand that dies
there (`sharing.py`). The live peak is the maximum (the first time it is reached). On every CPU
program tested this timeline equals, moment by moment at its maximum, the bytes XLA's own buffer
assignment gives the values live then (offsets overlapping once).

`xla_moment` reproduces the time XLA's `*-live-range.txt` reports as `Live ranges at N (peak)`
(HloLiveRange::ComputePeakMemoryMoment): XLA sweeps range starts at t and ends at t+1 in time
order, starts first, and keeps the first time its running sum is highest, so the moment is the
argmax of (live at t-1) + (defined at t); and the sum it sweeps sizes each value by its
*instruction's* shape, so an element of a tuple-shaped instruction (a while loop's carried
arrays, a multi-output fusion's outputs) counts as the tuple's pointer table. The dump then
lists the values live at that moment with their own sizes, each on its own (no sharing). So
XLA's figure is neither the highest point of its own live ranges nor of the memory its buffer
assignment holds: on a small MLP the values its ranges keep live four instructions later, which
nothing can share, hold 3.4% more. The live peak here is the true maximum, and the XLA moment is
kept beside it to compare with the dump buffer for buffer.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import accumulate

from hloscope.analyses.memory.liveness import Liveness
from hloscope.analyses.memory.liveness.values import Value, shape_bytes

SizeOf = Callable[[Value], int]
Keep = Callable[[Value], bool] | None


def bytes_of(value: Value) -> int:
    return value.bytes


def instruction_bytes(value: Value) -> int:
    """The size XLA's peak-moment sweep gives a value: its instruction's whole shape."""
    return shape_bytes(value.instruction.shape)


def live_bytes(liveness: Liveness, size_of: SizeOf = bytes_of, keep: Keep = None,
               per_buffer: bool = True, shared: bool = True) -> list[int]:
    """Bytes live at each logical time 0..end (inclusive: the end time holds the outputs);
    `per_buffer=False` sums values as XLA's live-range dump does (a shared end counts twice);
    `shared=False` counts an output and the operand whose buffer it takes both where they
    meet (buffers of XLA's alias analysis only)."""
    changes = [0] * (liveness.program.end_time + 2)
    values = _kept(liveness, keep)
    for start, end, size, _ in _spans(liveness, values, size_of, per_buffer, shared):
        changes[start] += size
        changes[end + 1] -= size
    return list(accumulate(changes[:-1]))


def space_timelines(liveness: Liveness, size_of: SizeOf = bytes_of,
                    shared: bool = True) -> dict[int, list[int]]:
    """Bytes live at each time, per memory space S(n), in one pass over the buffers."""
    length = liveness.program.end_time + 2
    changes: dict[int, list[int]] = {}
    for start, end, size, space in _spans(liveness, liveness.live_values(), size_of, True,
                                          shared):
        found = changes.get(space)
        if found is None:
            found = changes[space] = [0] * length
        found[start] += size
        found[end + 1] -= size
    return {space: list(accumulate(found[:-1])) for space, found in sorted(changes.items())}


Span = tuple[int, int, int, int]
"""(start, end, bytes, memory space) of one stretch of time a buffer is occupied."""


def _spans(liveness: Liveness, values: Iterable[Value], size_of: SizeOf,
           per_buffer: bool, shared: bool = True) -> Iterable[Span]:
    ranges = liveness.ranges
    if not per_buffer:
        for value in values:
            start, end = ranges[value.id]
            yield start, end, size_of(value), value.memory_space
        return
    for members in _by_buffer(liveness, values, shared).values():
        yield from _merged(sorted((ranges[v.id], size_of(v), v.memory_space) for v in members))


def _by_buffer(liveness: Liveness, values: Iterable[Value],
               shared: bool = True) -> dict[tuple[int, int], list[Value]]:
    groups: dict[tuple[int, int], list[Value]] = {}
    find = (liveness.allocations if shared else liveness.buffers).find
    for value in values:
        groups.setdefault((find(value.id), value.memory_space), []).append(value)
    return groups


def _merged(pieces: list[tuple[tuple[int, int], int, int]]) -> Iterable[Span]:
    """Touching or overlapping ranges of one buffer as one span of the largest size."""
    (start, end), size, space = pieces[0]
    for (next_start, next_end), next_size, _ in pieces[1:]:
        if next_start <= end:
            end, size = max(end, next_end), max(size, next_size)
            continue
        yield start, end, size, space
        start, end, size = next_start, next_end, next_size
    yield start, end, size, space


def added(timelines: Iterable[list[int]], length: int) -> list[int]:
    """The sum of several timelines of `length` times."""
    total = [0] * length
    for timeline in timelines:
        total = [a + b for a, b in zip(total, timeline, strict=True)]
    return total


def peak_time(live: list[int]) -> int:
    """The first time the live bytes are highest."""
    return live.index(max(live)) if live else 0


def xla_moment(liveness: Liveness, keep: Keep = None) -> int:
    """The time XLA's live-range dump calls the peak (see the module docstring)."""
    sizes: dict[int, int] = {}

    def size_of(value: Value) -> int:
        size = sizes.get(id(value.instruction))
        if size is None:
            size = sizes[id(value.instruction)] = instruction_bytes(value)
        return size

    born = [0] * (liveness.program.end_time + 2)
    for value in _kept(liveness, keep):
        born[liveness.ranges[value.id][0]] += size_of(value)
    live = live_bytes(liveness, size_of, keep, per_buffer=False)
    best_time, best = 0, 0
    for time in range(len(live)):
        transient = (live[time - 1] if time else 0) + born[time]
        if transient > best:
            best_time, best = time, transient
    return best_time


def live_at(liveness: Liveness, time: int, keep: Keep = None,
            per_buffer: bool = True, shared: bool = True) -> list[Value]:
    """The values whose live range holds `time`, in id order; per buffer, only the one that
    goes on (the latest to start) where two of one buffer (or, `shared`, an operand and the
    output made in its buffer) touch at `time`."""
    ranges = liveness.ranges
    found = [v for v in _kept(liveness, keep) if ranges[v.id][0] <= time <= ranges[v.id][1]]
    if not per_buffer:
        return found
    latest = {key: max(members, key=lambda v: (ranges[v.id][0], v.id))
              for key, members in _by_buffer(liveness, found, shared).items()}
    kept = {id(v) for v in latest.values()}
    return [v for v in found if id(v) in kept]


def _kept(liveness: Liveness, keep: Keep) -> Iterable[Value]:
    values = liveness.live_values()
    return values if keep is None else [v for v in values if keep(v)]
