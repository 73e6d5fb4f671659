"""Reading the trace JSON (`<host>.trace.json.gz`, Chrome trace format) into a `Trace`.

The fallback when no XSpace is at hand, and what xprof's trace viewer exports. It holds the
same op events as the XSpace but **no embedded HLO** (pass `--hlo`: the capture's xplane.pb,
a dump folder or HLO text). Processes are planes (`process_name` metadata), threads are lines
(`thread_name`). Op events:

- events with an `hlo_op` argument (jax.profiler's own JSON: `hlo_module`, `run_id` with it;
  no `program_id`, so ops join HLO by module name);
- on a device process, the events of the "XLA Ops" thread, read like the XSpace's
  (`device_ops`): xprof's export names the op in `name` and its text in `long_name`, keeps the
  device clock in `device_offset_ps` / `device_duration_ps`, and writes an op whose host-clock
  duration is 0 as an instant event (`"ph": "i"`), which is kept. Program and run come from
  the enclosing event of the "XLA Modules" thread (`jit_f(12190760917235803885)`).

`ts`/`dur` are microseconds (fractional); they become integer picoseconds. A PyTorch (Kineto)
trace is recognised (its `schemaVersion` and `cpu_op` / `kernel` events) so that it can be
refused for what it is.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import hloscope.parsers.trace.device_ops as ops
from hloscope.errors import ParseError, SourceLocation
from hloscope.model.trace import PS_PER_US, StepMark, Trace
from hloscope.parsers.trace.device_ops import RawEvent, SpanFinder
from hloscope.parsers.trace.xplane import TENSORFLOW_OPS_LINE, kernel_op_name
from hloscope.parsers.xla_memory.reading import read_bytes

TIMED = frozenset({"X", "i", "I"})  # complete events; instant ones (an op 0 ps long)
KINETO = "PyTorch (Kineto)"
KINETO_CATEGORIES = frozenset({"cpu_op", "kernel", "cuda_runtime", "gpu_memcpy"})


def read_trace_json(path: str | Path) -> Trace:
    """The Trace of a `*.trace.json(.gz)` file (ParseError when it is not trace JSON)."""
    return parse_trace_json(read_bytes(path), str(path))


def parse_trace_json(data: bytes, source: str = "<bytes>") -> Trace:
    document = _decode(data, source)
    events = document.get("traceEvents") if isinstance(document, dict) else document
    if not isinstance(events, list):
        raise ParseError("not a trace JSON: no traceEvents list", SourceLocation(source, 1, 1))
    planes, lines = _names(events)
    trace = Trace(source, "trace-json", planes=sorted(set(planes.values())))
    if _is_kineto(document, events):
        trace.frameworks.append(KINETO)
    if TENSORFLOW_OPS_LINE in lines.values():
        trace.frameworks.append("TensorFlow")
    by_thread: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        if isinstance(event, dict) and event.get("ph") in TIMED:
            by_thread[(event.get("pid"), event.get("tid"))].append(event)
    for (pid, tid), group in by_thread.items():
        plane = planes.get(pid, str(pid))
        line = lines.get((pid, tid), str(tid))
        spans = _spans(by_thread, lines, pid) if line == ops.OPS_LINE else None
        for event in group:
            _read_event(event, plane, line, spans, trace)
    trace.events.sort(key=lambda e: (e.start_ps, -e.duration_ps))
    trace.steps.sort(key=lambda s: s.start_ps)
    return trace


def _is_kineto(document: Any, events: list[Any]) -> bool:
    if not isinstance(document, dict) or "schemaVersion" not in document:
        return False
    return any(isinstance(e, dict) and e.get("cat") in KINETO_CATEGORIES for e in events)


def _spans(by_thread: dict[tuple[Any, Any], list[dict[str, Any]]],
           lines: dict[tuple[Any, Any], str], pid: Any) -> SpanFinder:
    """The "XLA Modules" executions of process `pid` (line clock)."""
    raws = [_raw(event) for (p, t), group in by_thread.items()
            if p == pid and lines.get((p, t)) == ops.MODULES_LINE for event in group]
    return SpanFinder(ops.module_spans([raw for raw in raws if raw is not None]))


def _raw(event: dict[str, Any]) -> RawEvent | None:
    start, duration = _ps(event.get("ts")), _ps(event.get("dur", 0))
    if start is None or duration is None:
        return None
    name = str(event.get("name", ""))
    return RawEvent(name, name, dict(event.get("args") or {}), start, duration)


def _decode(data: bytes, source: str) -> Any:
    try:
        return json.loads(data)
    except UnicodeDecodeError as error:
        raise ParseError(f"not a trace JSON: not UTF-8 text ({error.reason})",
                         SourceLocation(source, 1, error.start + 1)) from None
    except json.JSONDecodeError as error:
        raise ParseError(f"not a trace JSON: {error.msg}",
                         SourceLocation(source, error.lineno, error.colno)) from None


def _names(events: list[Any]) -> tuple[dict[Any, str], dict[tuple[Any, Any], str]]:
    planes: dict[Any, str] = {}
    lines: dict[tuple[Any, Any], str] = {}
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "M":
            continue
        name = str((event.get("args") or {}).get("name", ""))
        if event.get("name") == "process_name":
            planes[event.get("pid")] = name
        elif event.get("name") == "thread_name":
            lines[(event.get("pid"), event.get("tid"))] = name
    return planes, lines


def _read_event(event: dict[str, Any], plane: str, line: str, spans: SpanFinder | None,
                trace: Trace) -> None:
    raw = _raw(event)
    if raw is None:
        return
    args = raw.stats
    if "hlo_op" in args or (spans is not None and plane.startswith("/device:")):
        op = ops.device_op(raw, plane, line, spans.at(raw.start_ps) if spans else None)
        name, command_buffer = kernel_op_name(str(args.get("hlo_op") or ""),
                                              ops.op_name(raw, by_hlo_op=False))
        trace.events.append(replace(op, name=name, command_buffer=command_buffer))
    elif "step_num" in args or line == ops.STEPS_LINE:
        number = ops.int_or_none(args.get("step_num"))
        trace.steps.append(StepMark(len(trace.steps) if number is None else number,
                                    raw.start_ps, raw.duration_ps, f"{plane} {line}"))


def _ps(microseconds: Any) -> int | None:
    try:
        return round(float(microseconds) * PS_PER_US)
    except (TypeError, ValueError):
        return None
