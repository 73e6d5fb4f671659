"""A profiler trace and the HLO of the programs it ran, found together.

The HLO comes from `--hlo` when given, else from the dump folder of the `hloscope profile` folder
the trace is in (`formats.profile.find_dump_folder`), else from the HloProtos the trace embeds.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hloscope.formats.profile import find_dump_folder
from hloscope.model.trace import Trace
from hloscope.parsers.trace import load_trace, trace_programs
from hloscope.parsers.trace.programs import ProgramIndex


@dataclass(frozen=True)
class TracedRun:
    """A trace and the programs it ran."""

    trace: Trace
    programs: ProgramIndex


def load_traced(source: str | Path, hlo: str | Path | None = None,
                prefer_json: bool = False) -> TracedRun:
    """The trace at `source` (a profile folder, an xplane.pb or a trace JSON) and its HLO."""
    trace = load_trace(source, prefer_json=prefer_json)
    dump = None if hlo is not None else find_dump_folder(source)
    return TracedRun(trace, trace_programs(trace, hlo, dump))
