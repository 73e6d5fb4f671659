"""Live bytes over the schedule, rebuilt from XLA's text dumps of one compile.

The live-range dump gives each value's interval (schedule positions, inclusive); the buffer
assignment gives its allocation, offset and size (padded, as allocated). Within one allocation,
values at the same offset that are live at once share memory (an in-place op's operand ends
where its output starts), so each (allocation, offset) counts the largest value live there.

`allocation_profile` of a temporary allocation, restricted to the values the heap simulator
traced, peaks exactly where and at what XProf's replay of the HloProto's trace peaks (checked on
CPU, GPU and TPU compiles). `space_profile` sums every allocation of a color (parameters,
outputs, constants too): a per-memory-space live peak from XLA's own data, which, unlike the
live-range dump's `Live ranges at N (peak)`, neither mixes spaces nor drops TPU tile padding.
Values without an interval (thread-local values of fusions and reducers: they are not in the
flattened schedule) are reported in `missing_values`.
"""
from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable

from hloscope.model.xla_memory import (
    AssignedValue,
    BufferAllocation,
    BufferAssignment,
    LiveInterval,
    LiveProfile,
    LiveRangeDump,
)

Slot = tuple[int, int]  # (allocation index, offset)
_Item = tuple[int, int, int, str]  # (start, end, size, key)


def allocation_profile(assignment: BufferAssignment, live_range: LiveRangeDump,
                       allocation_index: int,
                       value_ids: Collection[int] | None = None) -> LiveProfile:
    """Live bytes of one allocation; `value_ids` restricts it to those values (e.g. traced)."""
    allocation = assignment.allocation(allocation_index)
    return _profile([allocation], live_range, allocation.color,
                    lambda value: value_ids is None or value.id in value_ids, allocation_index)


def space_profile(assignment: BufferAssignment, live_range: LiveRangeDump,
                  color: int) -> LiveProfile:
    """Live bytes of every allocation of `color`."""
    chosen = [a for a in assignment.allocations if a.color == color]
    return _profile(chosen, live_range, color, lambda value: True, None)


def _profile(allocations: Iterable[BufferAllocation], live_range: LiveRangeDump, color: int,
             keep: Callable[[AssignedValue], bool], allocation_index: int | None) -> LiveProfile:
    intervals = live_range.by_key()
    slots: dict[Slot, list[_Item]] = defaultdict(list)
    missing: list[str] = []
    for allocation in allocations:
        for value in allocation.values:
            if not keep(value):
                continue
            interval = intervals.get(value.key)
            if interval is None:
                missing.append(value.key)
                continue
            slots[(allocation.index, value.offset)].append(_item(interval, value))
    timeline = _timeline(slots.values(), live_range.schedule_end + 1)
    peak_time = max(range(len(timeline)), key=timeline.__getitem__, default=0)
    peak = timeline[peak_time] if timeline else 0
    live = tuple(sorted(key for items in slots.values() for start, end, _, key in items
                        if start <= peak_time <= end))
    return LiveProfile(color, peak, peak_time, tuple(timeline), live, allocation_index,
                       tuple(missing))


def _item(interval: LiveInterval, value: AssignedValue) -> _Item:
    return interval.start, interval.end, value.size, value.key


def _timeline(slots: Iterable[list[_Item]], length: int) -> list[int]:
    delta = [0] * (length + 1)
    for items in slots:
        for time, change in _slot_steps(items):
            delta[min(time, length)] += change
    timeline, running = [], 0
    for time in range(length):
        running += delta[time]
        timeline.append(running)
    return timeline


def _slot_steps(items: list[_Item]) -> list[tuple[int, int]]:
    """(time, change) of one slot's bytes: the largest size among its values live at a time."""
    events: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for start, end, size, _ in items:
        events[start].append((size, +1))
        events[end + 1].append((size, -1))
    live: Counter[int] = Counter()
    heap: list[int] = []
    steps, current = [], 0
    for time in sorted(events):
        for size, sign in events[time]:
            live[size] += sign
            if sign > 0:
                heapq.heappush(heap, -size)
        while heap and live[-heap[0]] <= 0:
            heapq.heappop(heap)
        largest = -heap[0] if heap else 0
        if largest != current:
            steps.append((time, largest - current))
            current = largest
    return steps
