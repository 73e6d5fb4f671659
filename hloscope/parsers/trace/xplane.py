"""Reading an XSpace (`<host>.xplane.pb`, what `jax.profiler.trace` writes) into a `Trace`.

Executed HLO ops come from the host planes' `hlo_op` events (XLA:CPU), the device planes'
"XLA Ops" line (libtpu; read by `device_ops`) or, on raw CUPTI GPU planes, the per-stream
kernel, memcpy and memset events (a CUDA graph's `command_buffer_<n>` is kept on
`OpEvent.command_buffer`). "Async XLA Ops" spans go to `Trace.async_events`, not op time; step
marks come from "Steps" lines or `step_num` stats; `/host:metadata` carries each program's
HloProto and id (`embedded_modules`); the host planes' memory events give the allocators' peak
(`memory_events`). Stats are looked up on the event first, then on its event metadata; a
`ref_value` stat names another stat metadata whose name is the value.
What each writer puts where: see docs/trace-captures.md, 'What each writer puts where'.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from google.protobuf.message import DecodeError

from hloscope.errors import ParseError, SourceLocation
from hloscope.model.trace import EmbeddedModule, StepMark, Trace
from hloscope.parsers.trace.device_ops import (
    ASYNC_OPS_LINE,
    MODULES_LINE,
    OPS_LINE,
    STEPS_LINE,
    RawEvent,
    SpanFinder,
    device_op,
    int_or_none,
    module_spans,
    op_name,
    program_id,
    split_module_name,
)
from hloscope.parsers.trace.memory_events import memory_peaks, memory_states
from hloscope.parsers.trace.xspace_schema import xspace_class
from hloscope.parsers.xla_memory.reading import read_bytes

METADATA_PLANE = "/host:metadata"
TENSORFLOW_OPS_LINE = "TensorFlow Ops"  # TensorFlow's own (non-XLA) ops on a device plane
# A device plane's name of its device: a GPU's CUDA name ("NVIDIA H100 80GB HBM3"), libtpu's
# chip ("TPU v6 Lite", jax's device_kind but for case).
DEVICE_NAME_STATS = ("gpu_device_name", "device_type_string")
STREAM_LINE_PREFIX = "Stream #"
REPLACEMENT = b"\xef\xbf\xbd"  # U+FFFD in UTF-8: what a text conversion puts for bytes >= 0x80
_COMMAND_BUFFER = re.compile(r"^command_buffer_\d+$")


def read_xplane(path: str | Path) -> Trace:
    """The Trace of an `*.xplane.pb` file (ParseError when it is not an XSpace)."""
    return parse_xplane(read_bytes(path), str(path))


def parse_xplane(data: bytes, source: str = "<bytes>") -> Trace:
    space = xspace_class()()
    try:
        space.ParseFromString(data)
    except DecodeError as error:
        raise ParseError(f"not a serialized XSpace (xplane.pb): {error}{_damage(data)}",
                         SourceLocation(source, 1, 1)) from None
    if not space.planes:
        raise ParseError("not an XSpace: no planes (is this an xplane.pb file?)",
                         SourceLocation(source, 1, 1))
    trace = Trace(source, "xplane", planes=[plane.name for plane in space.planes],
                  warnings=[*space.errors, *space.warnings])
    for plane in space.planes:
        _read_plane(_Plane(plane), trace)
    trace.memory_states.extend(memory_states(_Plane(p) for p in space.planes
                                             if p.name.startswith("/host:")))
    trace.memory_peaks.extend(memory_peaks(trace.memory_states))
    trace.events.sort(key=lambda e: (e.start_ps, -e.duration_ps))
    trace.async_events.sort(key=lambda e: (e.start_ps, -e.duration_ps))
    trace.steps.sort(key=lambda s: s.start_ps)
    return trace


def _damage(data: bytes) -> str:
    """Why a file that fails to parse is damaged, when it shows: its bytes >= 0x80 replaced by
    U+FFFD (the file went through a text conversion, as one committed copy of xprof's own test
    capture did; valid UTF-8 sequences in its strings survive such a conversion)."""
    high = len(data) - len(data.translate(None, bytes(range(0x80, 0x100))))
    replaced = data.count(REPLACEMENT)
    if replaced >= 16 and 3 * replaced >= high // 2:
        return (f"; the file is damaged: {3 * replaced:,} of its {high:,} bytes >= 0x80 are "
                f"U+FFFD replacement characters ({replaced:,} x ef bf bd), as when a binary "
                "file is saved as text: fetch the original bytes")
    return ""


class _Plane:
    """One XPlane with its stat and event metadata resolved."""

    def __init__(self, proto: Any) -> None:
        self.proto = proto
        self.name: str = proto.name
        self.stat_names = {key: meta.name for key, meta in proto.stat_metadata.items()}
        self.event_metadata = dict(proto.event_metadata.items())

    def stats(self, stats: Any) -> dict[str, Any]:
        found = {}
        for stat in stats:
            kind = stat.WhichOneof("value")
            value = getattr(stat, kind) if kind else None
            if kind == "ref_value":
                value = self.stat_names.get(value, "")
            found[self.stat_names.get(stat.metadata_id, "")] = value
        return found

    def event_stats(self, event: Any) -> dict[str, Any]:
        metadata = self.event_metadata.get(event.metadata_id)
        merged = self.stats(metadata.stats) if metadata is not None else {}
        merged.update(self.stats(event.stats))
        return merged

    def event_name(self, event: Any) -> str:
        metadata = self.event_metadata.get(event.metadata_id)
        return metadata.name if metadata is not None else ""


def _read_plane(plane: _Plane, trace: Trace) -> None:
    if plane.name == METADATA_PLANE:
        trace.modules.extend(embedded_modules(plane))
    elif plane.name.startswith("/device:"):
        _read_device_plane(plane, trace)
    else:
        _read_host_plane(plane, trace)


def embedded_modules(plane: _Plane) -> Iterator[EmbeddedModule]:
    """The HloProtos of the metadata plane with their program ids: the `program_id` stat
    (XLA:GPU, XLA:CPU), else the id in the name `module(id)`, else the metadata's own id
    (libtpu: the program id as a signed 64-bit value)."""
    for key, metadata in plane.event_metadata.items():
        stats = plane.stats(metadata.stats)
        proto = stats.get("Hlo Proto")
        if not isinstance(proto, bytes):
            continue
        name, named_id = split_module_name(metadata.name)
        for found in (program_id(stats.get("program_id")), named_id,
                      program_id(metadata.id or key)):
            if found is not None:
                yield EmbeddedModule(found, name, proto)
                break


def _events(line: Any) -> Iterator[tuple[Any, int]]:
    """(event, start in ps) of a line's timed events (aggregated ones have no start)."""
    base = line.timestamp_ns * 1000
    for event in line.events:
        if event.WhichOneof("data") != "num_occurrences":
            yield event, base + event.offset_ps


def _raw(plane: _Plane, event: Any, start: int) -> RawEvent:
    metadata = plane.event_metadata.get(event.metadata_id)
    return RawEvent(metadata.name if metadata is not None else "",
                    metadata.display_name if metadata is not None else "",
                    plane.event_stats(event), start, event.duration_ps)


def _read_host_plane(plane: _Plane, trace: Trace) -> None:
    for line in plane.proto.lines:
        line_name = line.display_name or line.name
        for event, start in _events(line):
            stats = plane.event_stats(event)
            if "hlo_op" in stats:
                trace.events.append(device_op(_raw(plane, event, start), plane.name, line_name,
                                              None))
            elif "step_num" in stats:
                trace.steps.append(StepMark(int(stats["step_num"]), start, event.duration_ps,
                                            f"{plane.name} {line_name} (step_num)"))


def _read_device_plane(plane: _Plane, trace: Trace) -> None:
    plane_stats = plane.stats(plane.proto.stats)
    name = next((plane_stats[key] for key in DEVICE_NAME_STATS if plane_stats.get(key)), None)
    if name and name not in trace.device_names:
        trace.device_names.append(str(name))
    lines = {line.name: line for line in plane.proto.lines}
    if STEPS_LINE in lines:
        for index, (event, start) in enumerate(_events(lines[STEPS_LINE])):
            number = plane.event_stats(event).get("step_num", index)
            trace.steps.append(StepMark(int(number), start, event.duration_ps,
                                        f"{plane.name} {STEPS_LINE}"))
    if TENSORFLOW_OPS_LINE in lines and "TensorFlow" not in trace.frameworks:
        trace.frameworks.append("TensorFlow")
    if OPS_LINE in lines:
        _read_ops_lines(plane, lines, trace)
    else:
        _read_stream_lines(plane, trace)


def _read_ops_lines(plane: _Plane, lines: dict[str, Any], trace: Trace) -> None:
    """The "XLA Ops" line's ops and the "Async XLA Ops" line's in-flight spans."""
    modules = lines.get(MODULES_LINE)
    spans = SpanFinder(module_spans([_raw(plane, event, start) for event, start
                                     in _events(modules)] if modules is not None else []))
    for line_name, into, asynchronous in ((OPS_LINE, trace.events, False),
                                          (ASYNC_OPS_LINE, trace.async_events, True)):
        if line_name not in lines:
            continue
        for event, start in _events(lines[line_name]):
            raw = _raw(plane, event, start)
            into.append(device_op(raw, plane.name, line_name, spans.at(start), asynchronous))


def _read_stream_lines(plane: _Plane, trace: Trace) -> None:
    """The kernels, memcpys and memsets of a raw GPU plane (see the module docstring). One
    without XLA's program stats (a PjRt transfer, or every kernel of TensorFlow without XLA) is
    kept, in no program."""
    for line in plane.proto.lines:
        if not line.name.startswith(STREAM_LINE_PREFIX):
            continue
        for event, start in _events(line):
            raw = _raw(plane, event, start)
            name, command_buffer = kernel_op_name(str(raw.stats.get("hlo_op") or ""),
                                                  op_name(raw, by_hlo_op=False))
            op = device_op(raw, plane.name, line.name, None)
            trace.events.append(replace(op, name=name, command_buffer=command_buffer))


def kernel_op_name(thunk: str, kernel: str) -> tuple[str, str]:
    """(op name, command buffer) of a raw GPU kernel event: its thunk's `hlo_op`, or the
    kernel's own name when the thunk is a CUDA graph (`command_buffer_<n>`, then also
    returned) or absent."""
    command_buffer = thunk if _COMMAND_BUFFER.match(thunk) else ""
    return (thunk if thunk and not command_buffer else kernel), command_buffer


__all__ = ["embedded_modules", "int_or_none", "kernel_op_name", "parse_xplane", "read_xplane"]
