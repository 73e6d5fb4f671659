"""The device allocators' peak from a profile's memory events (what xprof's memory_profile reads).

The host plane holds one `MemoryAllocation` / `MemoryDeallocation` event per allocator call,
each with the allocator's state after it: `bytes_reserved` (the stack: the program's
preallocated temporaries and arguments), `bytes_allocated` (the heap), `peak_bytes_in_use`
(the allocator's own lifetime high-water mark), and which allocator: `index_on_host` (libtpu:
one per TPU core the host drives) or `allocator_name` (TensorFlow). xprof's memory_profile
reports, per allocator, the state at the event where stack + heap is largest ("peak in use");
the same figure is read here, so `hloscope trace` can show it beside hloscope's live peak.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hloscope.model.trace import MemoryPeak, MemoryState

MEMORY_EVENTS = frozenset({"MemoryAllocation", "MemoryDeallocation"})


def memory_states(planes: Iterable[Any]) -> list[MemoryState]:
    """Every allocator state the host planes' memory events give, in time order (`planes` are
    xplane's resolved planes: `event_metadata`, `event_stats`, `proto`)."""
    states = []
    for plane in planes:
        for line in plane.proto.lines:
            base = line.timestamp_ns * 1000
            for event in line.events:
                metadata = plane.event_metadata.get(event.metadata_id)
                if metadata is None or metadata.name not in MEMORY_EVENTS:
                    continue
                state = _state(plane.event_stats(event), base + event.offset_ps)
                if state is not None:
                    states.append(state)
    return sorted(states, key=lambda s: s.time_ps)


def memory_peaks(states: list[MemoryState]) -> list[MemoryPeak]:
    """Each allocator's largest state (the first where it is reached)."""
    peaks: dict[str, MemoryPeak] = {}
    for state in states:
        known = peaks.get(state.allocator)
        if known is None or state.in_use_bytes > known.peak_in_use_bytes:
            peaks[state.allocator] = MemoryPeak(state.allocator, state.in_use_bytes,
                                                state.time_ps)
    return sorted(peaks.values(), key=lambda p: p.allocator)


def _state(stats: dict[str, Any], time_ps: int) -> MemoryState | None:
    allocator = stats.get("index_on_host", stats.get("allocator_name"))
    if allocator is None or "bytes_allocated" not in stats:
        return None
    in_use = int(stats.get("bytes_reserved") or 0) + int(stats["bytes_allocated"])
    return MemoryState(str(allocator), time_ps, in_use)
