"""Bytes live over time, the peak, and the moment XLA's live-range dump calls its peak.

`live_bytes` sums, at every logical time t, the values whose closed range holds t: during
instruction t its operands (last used at t) and its outputs (defined at t) are both live. The
live peak is its maximum (the first time it is reached).

`xla_moment` reproduces the time XLA's `*-live-range.txt` reports as `Live ranges at N (peak)`
(HloLiveRange::ComputePeakMemoryMoment): XLA sweeps range starts at t and ends at t+1 in time
order, starts first, and keeps the first time its running sum is highest, so the moment is the
argmax of (live at t-1) + (defined at t); and the sum it sweeps sizes each value by its
*instruction's* shape, so an element of a tuple-shaped instruction (a while loop's carried
arrays, a multi-output fusion's outputs) counts as the tuple's pointer table. The dump then
lists the values live at that moment with their own sizes. Both quirks can put XLA's moment
away from the highest point: the live peak here is the true maximum, and the XLA moment is kept
beside it to compare with the dump buffer for buffer.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import accumulate

from hloscope.analyses.liveness import Liveness
from hloscope.analyses.liveness.values import Value, shape_bytes

SizeOf = Callable[[Value], int]
Keep = Callable[[Value], bool] | None


def bytes_of(value: Value) -> int:
    return value.bytes


def instruction_bytes(value: Value) -> int:
    """The size XLA's peak-moment sweep gives a value: its instruction's whole shape."""
    return shape_bytes(value.instruction.shape)


def live_bytes(liveness: Liveness, size_of: SizeOf = bytes_of, keep: Keep = None) -> list[int]:
    """Bytes live at each logical time 0..end (inclusive: the end time holds the outputs)."""
    changes = [0] * (liveness.program.end_time + 2)
    for value in _kept(liveness, keep):
        start, end = liveness.ranges[value.id]
        size = size_of(value)
        changes[start] += size
        changes[end + 1] -= size
    return list(accumulate(changes[:-1]))


def space_timelines(liveness: Liveness, size_of: SizeOf = bytes_of) -> dict[int, list[int]]:
    """Bytes live at each time, per memory space S(n), in one pass over the values."""
    length = liveness.program.end_time + 2
    changes: dict[int, list[int]] = {}
    ranges = liveness.ranges
    for value in liveness.live_values():
        start, end = ranges[value.id]
        size = size_of(value)
        space = value.memory_space
        found = changes.get(space)
        if found is None:
            found = changes[space] = [0] * length
        found[start] += size
        found[end + 1] -= size
    return {space: list(accumulate(found[:-1])) for space, found in sorted(changes.items())}


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
    live = live_bytes(liveness, size_of, keep)
    best_time, best = 0, 0
    for time in range(len(live)):
        transient = (live[time - 1] if time else 0) + born[time]
        if transient > best:
            best_time, best = time, transient
    return best_time


def live_at(liveness: Liveness, time: int, keep: Keep = None) -> list[Value]:
    """The values whose live range holds `time`, in id order."""
    return [v for v in _kept(liveness, keep)
            if liveness.ranges[v.id][0] <= time <= liveness.ranges[v.id][1]]


def _kept(liveness: Liveness, keep: Keep) -> Iterable[Value]:
    values = liveness.live_values()
    return values if keep is None else [v for v in values if keep(v)]
