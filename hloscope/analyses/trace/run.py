"""`hloscope trace` on a loaded trace: the analysis, xprof's cross-check, the Perfetto export.

The trace and the HLO of its programs come from the loader (`loader.trace.TracedRun`), and so
does xprof's peak heap of the analysed program (`TracedRun.xprof_peak_heap_bytes` runs xprof on
the trace file): `add_xprof_figures` only sets it beside the live peak. Without a named device,
a host-only trace is judged against the CPU's peak and a device trace against none (its device
is unknown). The memory figures beside the timings (the export's live bytes, the
live peak next to xprof's) are the analysed program's live peak; an unscheduled program has none.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hloscope.analyses.cost.flops import DEFAULT_SCOPE_DEPTH
from hloscope.analyses.trace.analysis import TraceResult, analyze_trace
from hloscope.devices import Device, get_device
from hloscope.errors import HloscopeError
from hloscope.loader.trace import TracedRun
from hloscope.model.trace import Trace

if TYPE_CHECKING:
    from hloscope.analyses.memory.analysis import MemoryResult


def analyse_traced(traced: TracedRun, device: str | Device | None = None,
                   module: str | None = None, scope_depth: int = DEFAULT_SCOPE_DEPTH,
                   peak_dtype: str = "bf16") -> TraceResult:
    """The trace analysis of the main (or named) program."""
    trace = traced.trace
    return analyze_trace(trace, traced.programs, _device(trace, device), module, scope_depth,
                         peak_dtype)


def add_xprof_figures(result: TraceResult, traced: TracedRun, peak_heap_bytes: int | None) -> None:
    """xprof's peak heap of the analysed program (`TracedRun.xprof_peak_heap_bytes`) and the live
    peak beside it, in `result.extra`; nothing when xprof gave none."""
    if peak_heap_bytes is None:
        return
    analysed = _memory(result, traced)
    result.extra.update({"xprof_peak_heap_bytes": peak_heap_bytes,
                         "live_peak_bytes": analysed.peak_bytes if analysed else None})


def chrome_trace_of(result: TraceResult, traced: TracedRun) -> dict[str, Any]:
    """The Perfetto / Chrome trace JSON: per-scope time and the live bytes over the step."""
    from hloscope.analyses.trace.export import chrome_trace

    analysed = _memory(result, traced)
    return chrome_trace(result, analysed.timeline if analysed else None)


def _device(trace: Trace, device: str | Device | None) -> Device | None:
    if isinstance(device, Device):
        return device
    if device is not None:
        return get_device(device)
    return None if trace.device_planes else get_device("cpu")


def _memory(result: TraceResult, traced: TracedRun) -> MemoryResult | None:
    """The memory analysis of the analysed program; None when it cannot be had (unscheduled)."""
    from hloscope.analyses.memory.analysis import memory

    program = next(p for p in traced.programs.programs if p.name == result.module_name
                   and p.program_id == result.program_id)
    try:
        return memory(program.module)
    except HloscopeError:
        return None

