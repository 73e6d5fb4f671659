"""Reading the trace JSON (`<host>.trace.json.gz`, Chrome trace format) into a `Trace`.

The fallback when no XSpace is at hand. It holds the same op events as the XSpace (complete
events, `"ph": "X"`, with `hlo_op`, `hlo_module` and `run_id` in `args`), but **no program_id**
and no embedded HLO: ops are joined to HLO by module name, which is ambiguous when a dump holds
several programs of that name (the analysis warns). Processes are planes (`process_name`
metadata), threads are lines (`thread_name`). On device planes the ops are the events of the
"XLA Ops" thread. `ts`/`dur` are microseconds (fractional); they become integer picoseconds.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hloscope.errors import ParseError, SourceLocation
from hloscope.model.trace import PS_PER_US, OpEvent, StepMark, Trace
from hloscope.parsers.trace.xplane import OPS_LINE, STEPS_LINE, int_or_none, kernel_op_name
from hloscope.parsers.xla_memory.reading import read_bytes


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
    for event in events:
        if isinstance(event, dict) and event.get("ph") == "X":
            _read_event(event, planes, lines, trace)
    trace.events.sort(key=lambda e: (e.start_ps, -e.duration_ps))
    trace.steps.sort(key=lambda s: s.start_ps)
    return trace


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


def _read_event(event: dict[str, Any], planes: dict[Any, str],
                lines: dict[tuple[Any, Any], str], trace: Trace) -> None:
    args = event.get("args") or {}
    plane = planes.get(event.get("pid"), str(event.get("pid")))
    line = lines.get((event.get("pid"), event.get("tid")), str(event.get("tid")))
    start, duration = _ps(event.get("ts")), _ps(event.get("dur"))
    if start is None or duration is None:
        return
    if "hlo_op" in args or (line == OPS_LINE and plane.startswith("/device:")):
        name, command_buffer = kernel_op_name(str(args.get("hlo_op") or ""),
                                              str(event.get("name", "")))
        trace.events.append(OpEvent(
            name=name, module=str(args.get("hlo_module", "")),
            program_id=int_or_none(args.get("program_id")), run_id=int_or_none(args.get("run_id")),
            start_ps=start, duration_ps=duration, plane=plane, line=line,
            command_buffer=command_buffer))
    elif "step_num" in args or line == STEPS_LINE:
        number = int_or_none(args.get("step_num"))
        trace.steps.append(StepMark(len(trace.steps) if number is None else number, start,
                                    duration, f"{plane} {line}"))


def _ps(microseconds: Any) -> int | None:
    try:
        return round(float(microseconds) * PS_PER_US)
    except (TypeError, ValueError):
        return None
