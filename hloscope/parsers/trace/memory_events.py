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

from hloscope.model.trace import MemoryPeak

MEMORY_EVENTS = frozenset({"MemoryAllocation", "MemoryDeallocation"})


def memory_peaks(planes: Iterable[Any]) -> list[MemoryPeak]:
    """The peak in use of each allocator over the host planes' memory events (`planes` are
    xplane's resolved planes: `stats`, `event_metadata`, `event_stats`, `proto`)."""
    peaks: dict[str, MemoryPeak] = {}
    for plane in planes:
        for line in plane.proto.lines:
            base = line.timestamp_ns * 1000
            for event in line.events:
                metadata = plane.event_metadata.get(event.metadata_id)
                if metadata is None or metadata.name not in MEMORY_EVENTS:
                    continue
                peak = _state(plane.event_stats(event), base + event.offset_ps)
                if peak is not None and (peak.allocator not in peaks or peak.peak_in_use_bytes
                                         > peaks[peak.allocator].peak_in_use_bytes):
                    peaks[peak.allocator] = peak
    return sorted(peaks.values(), key=lambda p: p.allocator)


def _state(stats: dict[str, Any], time_ps: int) -> MemoryPeak | None:
    allocator = stats.get("index_on_host", stats.get("allocator_name"))
    if allocator is None or "bytes_allocated" not in stats:
        return None
    in_use = int(stats.get("bytes_reserved") or 0) + int(stats["bytes_allocated"])
    return MemoryPeak(str(allocator), in_use, time_ps)
