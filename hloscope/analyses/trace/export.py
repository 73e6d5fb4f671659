"""A Chrome / Perfetto trace JSON with hloscope's view of a profile, to open beside the original.

It holds one process, "hloscope: <module>", on the original trace's clock (`ts` in
microseconds, as in the `*.trace.json.gz` jax.profiler writes), with
- a **counter track "live bytes"**: at the start of each measured execution of a top-level
  (entry computation) instruction, the bytes the memory analysis says are live while it runs
  (`hloscope memory`'s timeline: logical buffers, not XLA's allocation);
- one **thread per original thread** whose slices are the program's op events renamed by their
  source scope, with the phase as category and instruction, phase and self time as arguments;
- a **"self time by scope" counter per run**: at the end of each run, the op self time of each
  scope so far (so the counter's last values are the per-scope totals).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from hloscope.analyses.memory.analysis import TimelineStep
from hloscope.analyses.trace.analysis import TraceResult
from hloscope.analyses.trace.timing import group_runs
from hloscope.model.trace import PS_PER_US

PID = 1


def chrome_trace(result: TraceResult, timeline: list[TimelineStep] | None) -> dict[str, Any]:
    """The export as a JSON-serialisable dict (see the module docstring)."""
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": PID, "name": "process_name",
         "args": {"name": f"hloscope: {result.module_name}"}}]
    events += _scope_slices(result)
    events += _scope_totals(result)
    if timeline:
        events += _live_bytes(result, timeline)
    return {"displayTimeUnit": "ns", "traceEvents": events,
            "metadata": {"hloscope": "memory timeline and per-scope time",
                         "source": result.source, "module": result.module_name}}


def _scope_slices(result: TraceResult) -> list[dict[str, Any]]:
    threads: dict[str, int] = {}
    slices = []
    for joined in result.joined:
        event = joined.event
        tid = threads.setdefault(event.line, len(threads) + 1)
        instruction = joined.matched_instruction.name
        scope, phase = result.labels.get(instruction, ("", ""))
        slices.append({"ph": "X", "pid": PID, "tid": tid, "name": scope or instruction,
                       "cat": phase, "ts": event.start_ps / PS_PER_US,
                       "dur": event.duration_ps / PS_PER_US,
                       "args": {"instruction": instruction, "phase": phase,
                                "self_us": joined.self_ps / PS_PER_US}})
    names = [{"ph": "M", "pid": PID, "tid": tid, "name": "thread_name",
              "args": {"name": f"scopes ({line})"}} for line, tid in threads.items()]
    return names + slices


def _scope_totals(result: TraceResult) -> list[dict[str, Any]]:
    totals: dict[str, float] = defaultdict(float)
    counters = []
    for run in group_runs(result.joined, []):
        for joined in run.events:
            scope = result.labels.get(joined.matched_instruction.name, ("", ""))[0]
            totals[scope] += joined.self_ps / PS_PER_US
        end = max(j.event.end_ps for j in run.events) / PS_PER_US
        counters.append({"ph": "C", "pid": PID, "name": "self time by scope (µs)", "ts": end,
                         "args": dict(totals)})
    return counters


def _live_bytes(result: TraceResult, timeline: list[TimelineStep]) -> list[dict[str, Any]]:
    live = {step.instruction: step.live_bytes for step in timeline}
    counters = []
    for joined in result.joined:
        name = joined.matched_instruction.name
        if name in live:
            counters.append({"ph": "C", "pid": PID, "name": "live bytes",
                             "ts": joined.event.start_ps / PS_PER_US,
                             "args": {"bytes": live[name]}})
    return sorted(counters, key=lambda c: c["ts"])
