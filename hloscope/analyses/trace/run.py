"""`hloscope trace` on a loaded trace: the analysis, xprof's cross-check, the Perfetto export.

The trace and the HLO of its programs come from the loader (`loader.trace.TracedRun`), and so
does xprof's peak heap of the analysed program (`TracedRun.xprof_peak_heap_bytes` runs xprof on
the trace file): `add_xprof_figures` only sets it beside the live peak. Without a named device,
a host-only trace is judged against the CPU's peak and a device trace against none (its device
is unknown) unless its device planes name a device hloscope knows (`gpu_device_name`, CUDA's
name: "NVIDIA H100 80GB HBM3" is the h100; libtpu's `device_type_string`: "TPU v6 Lite" is the
v6e). The memory figures beside the timings (the export's live
bytes, the live peak next to xprof's) are the analysed program's live peak; an unscheduled
program has none.
"""
from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Any

from hloscope.analyses.cost.flops import DEFAULT_SCOPE_DEPTH
from hloscope.analyses.trace.analysis import TraceResult, analyze_trace
from hloscope.devices import DEVICES, Device, get_device
from hloscope.errors import HloscopeError, UsageError
from hloscope.formats.compile_record import MemoryFigures
from hloscope.loader.trace import TracedRun
from hloscope.model.trace import MemoryState, Trace

if TYPE_CHECKING:
    from hloscope.analyses.memory.analysis import MemoryResult


def analyse_traced(traced: TracedRun, device: str | Device | None = None,
                   module: str | None = None, scope_depth: int = DEFAULT_SCOPE_DEPTH,
                   peak_dtype: str = "bf16") -> TraceResult:
    """The trace analysis of the main (or named) program."""
    trace = traced.trace
    return analyze_trace(trace, traced.programs, _device(trace, device), module, scope_depth,
                         peak_dtype)


def add_xprof_figures(result: TraceResult, traced: TracedRun, peak_heap_bytes: int | None,
                      missing: str | None = None) -> None:
    """xprof's peak heap of the analysed program (`TracedRun.xprof_peak_heap_bytes`) and the live
    peak beside it, in `result.extra`. When xprof gave none, the peak heap is None and
    `xprof_note` says why (`missing`, e.g. "n/a: install 'hloscope[profile]'"): a figure the
    user was promised is never silently dropped."""
    analysed = _memory(result, traced)
    result.extra.update({"xprof_peak_heap_bytes": peak_heap_bytes,
                         "live_peak_bytes": analysed.peak_bytes if analysed else None})
    if peak_heap_bytes is None:
        result.extra["xprof_note"] = missing or "n/a: xprof gave no peak heap for this program"


def add_memory_profile(result: TraceResult, traced: TracedRun) -> None:
    """The device allocators' peak in use from the capture's memory events (xprof's
    memory_profile `peakBytesInUse`, read by hloscope itself: `parsers.trace.memory_events`),
    beside the live peak, in `result.extra`; nothing where the capture has no memory events.
    The allocator's peak covers every program the device held at that moment, not the
    analysed one alone."""
    peaks = traced.trace.memory_peaks
    if not peaks:
        return
    top = max(peaks, key=lambda p: p.peak_in_use_bytes)
    result.extra["memory_profile_peak_bytes"] = top.peak_in_use_bytes
    result.extra["memory_profile_note"] = (
        f"the largest of {len(peaks)} device allocators' peak in use (stack + heap, xprof's "
        "memory_profile peakBytesInUse), over every program the device held")
    during = _in_use_during(traced.trace.memory_states, result)
    if during is not None:
        result.extra["memory_profile_peak_during_program_bytes"] = during
    if "live_peak_bytes" not in result.extra:
        analysed = _memory(result, traced)
        result.extra["live_peak_bytes"] = analysed.peak_bytes if analysed else None


def add_model_check(result: TraceResult, traced: TracedRun) -> None:
    """Measured per-op time beside the per-op step model's (`model_check`), in
    `result.model_check`; nothing where the device is unknown or has no calibration table."""
    from hloscope.analyses.trace.model_check import model_check

    device = get_device(result.device) if result.device else None
    if device is None or result.op_stats is None:
        return
    result.model_check = model_check(traced.programs, result.op_stats,
                                     traced.trace.async_events, device, result.module_name,
                                     result.step_times_us)


def _in_use_during(states: list[MemoryState], result: TraceResult) -> int | None:
    """The largest in-use state of any allocator while the analysed program ran (its runs'
    spans, per core, from first op start to last op end); None when no state falls in one."""
    spans: dict[tuple[str, int | None], list[int]] = {}
    for joined in result.joined:
        event = joined.event
        span = spans.setdefault((event.plane, event.run_id), [event.start_ps, event.end_ps])
        span[0], span[1] = min(span[0], event.start_ps), max(span[1], event.end_ps)
    merged: list[list[int]] = []
    for start, end in sorted(spans.values()):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    starts = [start for start, _ in merged]
    inside = [s.in_use_bytes for s in states
              if (i := bisect.bisect_right(starts, s.time_ps) - 1) >= 0
              and s.time_ps <= merged[i][1]]
    return max(inside, default=None)


def add_measured_memory(result: TraceResult, traced: TracedRun) -> None:
    """What the `hloscope profile` run measured, beside XLA's figure for its step, in
    `result.extra`: the device allocator's peak (`memory_stats()`: the state and batch
    included) and `memory_analysis()`'s arguments + outputs - aliased + temporaries. Nothing
    where the run kept no allocator counters (CPU) or the trace is not in a profile folder.
    Where the peak is the one the allocator had reached when the compile ended, it was the
    autotuner's scratch, not the run, and a note says so."""
    recorded = traced.device_memory or {}
    allocator, analysis = recorded.get("allocator"), recorded.get("memory_analysis")
    if not allocator or not analysis:
        return
    peak = allocator["peak_bytes_in_use"]
    result.extra["measured_peak_bytes"] = peak
    result.extra["xla_required_bytes"] = MemoryFigures.from_dict(analysis).allocated_bytes
    if recorded.get("compile_peak_bytes") == peak:
        result.extra["measured_peak_note"] = ("the allocator's peak was reached while compiling "
                                              "(the autotuner's scratch), not by the run")


def chrome_trace_of(result: TraceResult, traced: TracedRun) -> dict[str, Any]:
    """The Perfetto / Chrome trace JSON: per-scope time and the live bytes over the step."""
    from hloscope.analyses.trace.export import chrome_trace

    analysed = _memory(result, traced)
    return chrome_trace(result, analysed.timeline if analysed else None)


def _device(trace: Trace, device: str | Device | None) -> Device | None:
    if device is None:
        return _named_by_trace(trace) if trace.device_planes else get_device("cpu")
    named = device if isinstance(device, Device) else get_device(device)
    ran_on = trace_backends(trace)
    if named.backend not in ran_on:
        raise UsageError(
            f"--device {named.name} is a {named.backend.upper()}, but this trace ran on "
            f"{' and '.join(sorted(b.upper() for b in ran_on))} ({', '.join(_planes(trace))}): "
            "MFU against another device's peak would be meaningless; name the device the trace "
            "ran on, or leave --device out")
    return named


def _named_by_trace(trace: Trace) -> Device | None:
    """The known device whose name a device trace's planes all give (a GPU's CUDA name,
    libtpu's `device_type_string` "TPU v6 Lite": jax's device_kind but for case), else None."""
    if len(trace.device_names) != 1:
        return None
    named = trace.device_names[0].lower()
    found = [d for d in DEVICES.values() if (d.device_kind or "").lower() == named]
    return found[0] if len(found) == 1 else None


def trace_backends(trace: Trace) -> set[str]:
    """The backends whose ops the trace holds: its device planes' kinds (`/device:TPU:0` ->
    tpu; the plane names XLA's profiler gives), or cpu for a host-only trace."""
    kinds = {plane.split(":")[1].lower() for plane in trace.device_planes if plane.count(":") >= 2}
    return kinds or {"cpu"}


def _planes(trace: Trace) -> list[str]:
    hosts = [p for p in trace.planes if p.startswith("/host:") and p != "/host:metadata"]
    return trace.device_planes or hosts or ["no device plane"]


def _memory(result: TraceResult, traced: TracedRun) -> MemoryResult | None:
    """The memory analysis of the analysed program; None when it cannot be had (unscheduled)."""
    from hloscope.analyses.memory.analysis import memory

    program = next(p for p in traced.programs.programs if p.name == result.module_name
                   and p.program_id == result.program_id)
    try:
        return memory(program.module)
    except HloscopeError:
        return None

