"""A profiler trace and the HLO of the programs it ran, found together.

The HLO comes from `--hlo` when given, else from the dump folder of the `hloscope profile` folder
the trace is in (`formats.profile.find_dump_folder`), else from the HloProtos the trace embeds
(for a trace JSON, which embeds none: the XSpace of the same capture beside it).
`TracedRun.xprof_peak_heap_bytes` runs xprof's converter on the trace file
(`parsers.trace.xprof`) for the cross-check of one program, once the analysis has named it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hloscope.errors import InputError
from hloscope.formats.profile import find_dump_folder, find_profile_folder, read_profile_manifest
from hloscope.model.trace import Trace
from hloscope.optional import available
from hloscope.parsers.trace import load_trace, trace_programs
from hloscope.parsers.trace.files import xspace_beside
from hloscope.parsers.trace.programs import ProgramIndex
from hloscope.parsers.trace.xprof import xprof_peak_heap

XPROF_EXTRA = "hloscope[profile]"


@dataclass(frozen=True)
class TracedRun:
    """A trace and the programs it ran; `device_memory` is what the `hloscope profile` run the
    trace is in recorded (profile.json's, None elsewhere)."""

    trace: Trace
    programs: ProgramIndex
    device_memory: dict[str, Any] | None = None

    def xprof_peak_heap_bytes(self, module: str, program_id: int | None) -> int | None:
        """xprof's memory_viewer peak heap of a program of the trace; None when the trace is not
        an XSpace, xprof is not installed, or it gives none."""
        if self.trace.kind != "xplane":
            return None
        figures = xprof_peak_heap(Path(self.trace.source), module, program_id)
        return None if figures is None else figures.peak_heap_bytes

    def xprof_missing(self) -> str | None:
        """Why xprof cannot give a peak heap for this trace ("n/a: ..."), or None when it can
        be asked."""
        if self.trace.kind != "xplane":
            return "n/a: only an XSpace (xplane.pb) carries the memory profile, not a trace JSON"
        if not available("xprof"):
            return f"n/a: install {XPROF_EXTRA} (xprof) for its memory_viewer peak heap"
        return None


def load_traced(source: str | Path, hlo: str | Path | None = None,
                prefer_json: bool = False) -> TracedRun:
    """The trace at `source` (a profile folder, an xplane.pb or a trace JSON) and its HLO."""
    trace = load_trace(source, prefer_json=prefer_json)
    dump = None if hlo is not None else find_dump_folder(source)
    if hlo is None and dump is None and trace.kind == "trace-json":
        hlo = xspace_beside(Path(trace.source))
    return TracedRun(trace, trace_programs(trace, hlo, dump), _recorded_memory(source))


def _recorded_memory(source: str | Path) -> dict[str, Any] | None:
    folder = find_profile_folder(source)
    if folder is None:
        return None
    try:
        return read_profile_manifest(folder).data.get("device_memory")
    except InputError:
        return None
