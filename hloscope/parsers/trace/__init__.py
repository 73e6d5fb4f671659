"""Profiler traces: XSpace (`*.xplane.pb`, read with the project's own schema) and the trace
JSON fallback (jax's own, xprof's export), into `hloscope.model.trace.Trace`; the HLO of the
programs a trace ran. `device_ops` reads an op event however XLA:CPU, XLA:GPU, libtpu and
xprof's export spell it (docs/trace-captures.md); `memory_events` the allocators' peak.

    trace = load_trace("profile_dir/")          # newest run; XSpace preferred
    programs = trace_programs(trace, hlo=None)  # --hlo, else the dump beside, else embedded
"""
from __future__ import annotations

from hloscope.parsers.trace.files import find_trace_file, load_trace
from hloscope.parsers.trace.programs import ProgramIndex, TraceProgram, trace_programs
from hloscope.parsers.trace.trace_json import parse_trace_json, read_trace_json
from hloscope.parsers.trace.xplane import parse_xplane, read_xplane

__all__ = [
    "ProgramIndex",
    "TraceProgram",
    "find_trace_file",
    "load_trace",
    "parse_trace_json",
    "parse_xplane",
    "read_trace_json",
    "read_xplane",
    "trace_programs",
]
