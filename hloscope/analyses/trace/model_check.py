"""Measured per-op time against the per-op step-time model (`hloscope.analyses.steptime`).

For each program of the capture with its HLO, the model times every top-level op once
(`step_time(module, device).ops`); the capture says what one execution took: an op's self time
over its events (`op_stats`: all cores, so the mean over cores and runs), and for the start of
an asynchronous host transfer (`copy-start`), whose own event is a few nanoseconds, the span the
"Async XLA Ops" line gives it from start to done (what the model's link time is). Ops the model
does not list (the `-done` of a transfer: the model waits there) or the capture does not show
have no row. `ratio` is predicted / measured: below 1 the model is too fast.

The analysed program's median step is set beside the model's step. The device is the one the
analysis ran against (named by the capture or `--device`); a device without a calibration
table (the CPU) gives no check.
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from hloscope.analyses.steptime import step_time
from hloscope.analyses.trace.op_stats import OpStats
from hloscope.devices import Device
from hloscope.model.trace import PS_PER_US, OpEvent
from hloscope.parsers.trace.programs import ProgramIndex

ASYNC_STARTS = frozenset({"copy-start"})


@dataclass(frozen=True, slots=True)
class OpCheck:
    module: str
    program_id: int | None
    op: str
    kind: str  # the model's: matmul, vector, memory-bound op, collective, host transfer
    measured_us: float  # one execution, mean over cores and runs
    predicted_us: float
    ratio: float  # predicted / measured
    measured_as: str  # "self time" or "in flight (Async XLA Ops)"


@dataclass(frozen=True, slots=True)
class ModelCheck:
    device: str
    module: str
    step_measured_s: float | None  # the analysed program's median step
    step_predicted_s: float
    ops: list[OpCheck] = field(default_factory=list)


def model_check(index: ProgramIndex, stats: OpStats, async_events: list[OpEvent],
                device: Device, module: str, step_times_us: list[float]) -> ModelCheck | None:
    """The check (see the module docstring); None when the model has no table for `device`."""
    in_flight = _in_flight_us(async_events)
    measured = {(o.program_id, o.op): o.self_us / o.occurrences for o in stats.ops
                if o.occurrences}
    rows: list[OpCheck] = []
    step_predicted = None
    for program in index.programs:
        predicted = step_time(program.module, device)
        if predicted is None:
            return None
        if program.name == module:
            step_predicted = predicted.seconds
        rows += _rows(program.name, program.program_id, predicted.ops, measured, in_flight)
    if step_predicted is None:
        return None
    step_measured = statistics.median(step_times_us) / 1e6 if step_times_us else None
    rows.sort(key=lambda r: -r.measured_us)
    return ModelCheck(device.name, module, step_measured, step_predicted, rows)


def _rows(module: str, program_id: int | None, records, measured, in_flight) -> list[OpCheck]:
    rows = []
    for record in records:
        key = (program_id, record.name)
        if record.opcode in ASYNC_STARTS and key in in_flight:
            seen, how = in_flight[key], "in flight (Async XLA Ops)"
        elif key in measured:
            seen, how = measured[key], "self time"
        else:
            continue
        predicted_us = record.seconds * 1e6
        rows.append(OpCheck(module, program_id, record.name, record.kind, seen, predicted_us,
                            predicted_us / seen if seen else 0.0, how))
    return rows


def _in_flight_us(events: list[OpEvent]) -> dict[tuple[int | None, str], float]:
    spans: dict[tuple[int | None, str], list[int]] = defaultdict(list)
    for event in events:
        spans[(event.program_id, event.name)].append(event.duration_ps)
    return {key: statistics.fmean(values) / PS_PER_US for key, values in spans.items()}
