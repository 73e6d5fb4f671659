"""XSpaces (what `jax.profiler.trace` writes as `*.xplane.pb`) built by hand for the trace tests,
with the schema's own message classes: planes, lines, and events with their stats."""
from __future__ import annotations

from typing import Any

from hloscope.parsers.trace.xspace_schema import message_class

US = 1_000_000  # picoseconds


class XSpaceBuilder:
    """An XSpace assembled plane by plane."""

    def __init__(self) -> None:
        self.space = message_class("tensorflow.profiler.XSpace")()

    def plane(self, name: str) -> PlaneBuilder:
        return PlaneBuilder(self.space.planes.add(id=len(self.space.planes), name=name))

    def bytes(self) -> bytes:
        return self.space.SerializeToString()


class PlaneBuilder:
    """One plane: each event gets its own event metadata (its name); stats go on the event."""

    def __init__(self, plane: Any) -> None:
        self.plane = plane

    def _stat_id(self, name: str) -> int:
        for key, meta in self.plane.stat_metadata.items():
            if meta.name == name:
                return key
        key = len(self.plane.stat_metadata) + 1
        self.plane.stat_metadata[key].id = key
        self.plane.stat_metadata[key].name = name
        return key

    def line(self, name: str, timestamp_ns: int = 0) -> Any:
        return self.plane.lines.add(id=len(self.plane.lines), name=name,
                                    timestamp_ns=timestamp_ns)

    def event(self, line: Any, name: str, start_us: float, duration_us: float,
              **stats: str | int) -> None:
        key = len(self.plane.event_metadata) + 1
        self.plane.event_metadata[key].id = key
        self.plane.event_metadata[key].name = name
        event = line.events.add(metadata_id=key, offset_ps=round(start_us * US),
                                duration_ps=round(duration_us * US))
        for stat, value in stats.items():
            added = event.stats.add(metadata_id=self._stat_id(stat))
            if isinstance(value, str):
                added.str_value = value
            else:
                added.int64_value = value
