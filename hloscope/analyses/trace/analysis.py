"""`trace`: measured time joined to the HLO — per op, scope, layer and phase, remat time, MFU.

Inputs: a `Trace` (parsers/trace) and the HLO of the programs it ran (`ProgramIndex`). The
analysis follows one program, the main one: `module` names it (module name or program id),
else the one with the most op time. Every figure is over the events of that program:

- `step_times_us`: wall time of each run (one execution of the program: one step);
- `op_time_us`: summed self time of its op events joined to an instruction (`trace_join`),
  which exceeds the wall time when ops run on several threads at once;
- `unmatched_us`: the time of its events that join no instruction (a raw GPU trace's library
  kernels inside CUDA graphs), by reason in `unmatched_by_reason`, and `unmatched_share` of
  all its op time; a run's wall time spans these events too;
- breakdowns by op, phase, scope and layer (`trace_time`: each op's time split like its FLOPs;
  a scanned layer's time by iteration);
- `op_stats`: every program's ops over the whole capture, all cores, with their categories
  (`op_stats.py`: xprof's hlo_stats and op_profile figures);
- `remat_time_share`: the fraction of op self time spent in recomputed work (JAX's
  `rematted_computation` ops and XLA's `.remat` clones);
- FLOPs per step (static: `hloscope flops`, loops times their trip counts); achieved FLOP/s =
  FLOPs per step / median step time; with the device's peak FLOP/s (`hloscope.devices`; known
  for TPUs and GPUs, not for CPU): HFU = achieved / peak and MFU = the same without the
  recomputed FLOPs. Where the peak is unknown, MFU and HFU are None and `mfu_note` says why.
"""
from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from hloscope.analyses.cost import CostAnalysis, CostOptions
from hloscope.analyses.cost.attribution import charges
from hloscope.analyses.cost.flops import DEFAULT_SCOPE_DEPTH, common_scope_prefix, flops
from hloscope.analyses.cost.remat import remat
from hloscope.analyses.trace.join import (
    Join,
    JoinedEvent,
    executions_per_run,
    join_events,
    unjoined_reason,
)
from hloscope.analyses.trace.model_check import ModelCheck
from hloscope.analyses.trace.op_stats import OpStats, op_stats
from hloscope.analyses.trace.timing import (
    event_labels,
    group_runs,
    instruction_shares,
    one_core,
    split_time,
)
from hloscope.dataframes import Rendered
from hloscope.devices import Device
from hloscope.errors import InputError, MissingHloError
from hloscope.model.trace import PS_PER_US, Trace
from hloscope.parsers.trace.programs import ProgramIndex, TraceProgram

PEAK_DTYPES = ("bf16", "f32", "tf32", "fp8", "int8")


@dataclass(frozen=True, slots=True)
class TimeRow:
    key: str
    self_us: float
    share: float
    flops_per_step: int | None = None
    achieved_flops_per_s: float | None = None


@dataclass(frozen=True, slots=True)
class OpRow:
    instruction: str
    opcode: str
    computation: str
    events: int
    executions_per_step: int
    self_us: float
    mean_us: float
    share: float
    op_name: str = ""  # the instruction's metadata op_name (JAX's name stack)
    source: str = ""  # file:line from its metadata or stack frame, as the HLO records it


@dataclass(frozen=True, slots=True)
class ProgramRow:
    module: str
    program_id: int | None
    events: int
    self_us: float
    joined: bool


@dataclass(slots=True)
class TraceResult(Rendered):
    source: str
    kind: str
    module_name: str
    program_id: int | None
    hlo_origin: str
    planes: list[str]
    steps: int
    step_times_us: list[float]
    wall_us: float
    op_time_us: float
    remat_time_share: float
    flops_per_step: int
    recompute_flops_per_step: int
    achieved_flops_per_s: float | None
    device: str | None
    peak_flops_per_s: float | None
    mfu: float | None
    hfu: float | None
    mfu_note: str
    by_op: list[OpRow]
    by_phase: list[TimeRow]
    by_scope: list[TimeRow]
    by_layer: list[TimeRow]
    programs: list[ProgramRow]
    unmatched_events: int
    unmatched_us: float = 0.0
    unmatched_share: float = 0.0  # of the program's op time, unmatched events included
    unmatched_by_reason: dict[str, float] = field(default_factory=dict)  # reason -> µs
    count_mismatches: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    scope_prefix: str = ""
    op_stats: OpStats | None = None  # every program's ops over the capture (xprof's hlo_stats)
    model_check: ModelCheck | None = None  # measured vs the per-op step model (run.py sets it)
    extra: dict = field(default_factory=dict)  # figures added by the CLI (xprof's peak heap)
    joined: list[JoinedEvent] = field(default_factory=list, repr=False)  # not in JSON
    labels: dict[str, tuple[str, str]] = field(default_factory=dict, repr=False)  # not in JSON

    def rows(self, by: str) -> list[Any]:
        tables: dict[str, list[Any]] = {"op": self.by_op, "phase": self.by_phase,
                                        "scope": self.by_scope, "layer": self.by_layer}
        return tables[by]

    def to_dict(self) -> dict:
        data = asdict(replace(self, joined=[], labels={}))
        for hidden in ("extra", "joined", "labels"):
            data.pop(hidden)
        return {**data, **self.extra}


def analyze_trace(trace: Trace, index: ProgramIndex, device: Device | None = None,
                  module: str | None = None, scope_depth: int = DEFAULT_SCOPE_DEPTH,
                  peak_dtype: str = "bf16") -> TraceResult:
    joined = join_events(trace.events, index)
    program = _main_program(joined, index, module)
    mine = [j for j in joined.matched if j.program is program]
    unjoined = [j for j in joined.unmatched if _is_program(j, program)]
    analysis = CostAnalysis(program.module, CostOptions())
    all_charges = charges(analysis)
    costed = [c for c in all_charges if c.cost.flops or c.cost.bytes_accessed
              or c.cost.transcendentals]
    prefix = common_scope_prefix(costed)
    shares = instruction_shares(all_charges, scope_depth, prefix)
    per_run = executions_per_run(analysis)
    times, recomputed = split_time(mine, shares, scope_depth, prefix, per_run, trace.steps)
    runs = group_runs(mine + unjoined, trace.steps)
    static = flops(analysis, scope_depth, charged=costed)
    rematted = remat(analysis, charged=costed, scope_depth=scope_depth)
    op_ps = sum(j.self_ps for j in mine)
    step_us = [run.wall_ps / PS_PER_US for run in runs]
    recompute_flops = rematted.recompute_flops + rematted.xla_remat_flops
    figures = _utilisation(static.total.flops, recompute_flops, step_us, device, peak_dtype)
    phase_flops = {row.key: row.flops for row in static.rows("phase")}
    return TraceResult(
        source=trace.source, kind=trace.kind, module_name=program.name,
        program_id=program.program_id, hlo_origin=program.origin, planes=trace.planes,
        steps=len(runs), step_times_us=step_us, wall_us=sum(step_us),
        op_time_us=op_ps / PS_PER_US, remat_time_share=recomputed / op_ps if op_ps else 0.0,
        flops_per_step=static.total.flops, recompute_flops_per_step=recompute_flops,
        **figures,
        by_op=_op_rows(mine, per_run, op_ps),
        by_phase=_time_rows(times["phase"], op_ps, phase_flops, len(runs)),
        by_scope=_time_rows(times["scope"], op_ps),
        by_layer=_time_rows(times["layer"], op_ps),
        programs=_program_rows(joined, program),
        **_unmatched(unjoined, op_ps),
        count_mismatches=_count_mismatches(one_core(mine), per_run, len(runs)),
        warnings=[*trace.warnings, *index.warnings], scope_prefix="/".join(prefix),
        op_stats=op_stats(joined),
        joined=mine, labels=event_labels(mine, shares, scope_depth, prefix))


def _main_program(joined: Join, index: ProgramIndex, wanted: str | None) -> TraceProgram:
    if not index.programs:
        raise MissingHloError("none of the HLO given matches a program of the trace")
    if wanted is not None:
        for program in index.programs:
            if wanted in (program.name, str(program.program_id)):
                return program
        names = ", ".join(f"{p.name} ({p.program_id})" for p in index.programs)
        raise InputError(f"no program {wanted!r} in the trace's HLO; it has: {names}")
    time: Counter[int] = Counter()
    for event in joined.matched:
        time[id(event.program)] += event.self_ps
    if not time:
        names = ", ".join(f"{p.name} ({p.program_id})" for p in index.programs)
        sample = ", ".join(sorted({e.event.name for e in joined.events})[:5])
        raise MissingHloError(f"no op event of the trace names an instruction of the HLO at "
                              f"hand ({names}): the events name {sample}, ... (is it the HLO "
                              "of the traced program?)")
    return max(index.programs, key=lambda p: time.get(id(p), 0))


def _is_program(joined: JoinedEvent, program: TraceProgram) -> bool:
    event = joined.event
    if event.program_id is not None and program.program_id is not None:
        return event.program_id == program.program_id
    return event.module == program.name


def _unmatched(unjoined: list[JoinedEvent], op_ps: int) -> dict:
    by_reason: Counter[str] = Counter()
    for joined in unjoined:
        by_reason[unjoined_reason(joined)] += joined.event.duration_ps
    total = sum(by_reason.values())
    return {"unmatched_events": len(unjoined), "unmatched_us": total / PS_PER_US,
            "unmatched_share": total / (total + op_ps) if total else 0.0,
            "unmatched_by_reason": {reason: ps / PS_PER_US
                                    for reason, ps in by_reason.most_common()}}


def _utilisation(total_flops: int, recompute_flops: int, step_us: list[float],
                 device: Device | None, dtype: str) -> dict:
    step_s = statistics.median(step_us) / 1e6 if step_us else 0.0
    achieved = total_flops / step_s if step_s else None
    peak = getattr(device.peak_flops, dtype, None) if device is not None else None
    figures = {"achieved_flops_per_s": achieved, "device": device.name if device else None,
               "peak_flops_per_s": peak, "mfu": None, "hfu": None}
    if device is None:
        return {**figures, "mfu_note": "n/a: the device is not known (pass --device)"}
    if peak is None or achieved is None:
        return {**figures, "mfu_note": f"n/a: no published peak {dtype} FLOP/s for "
                                       f"{device.description}"}
    model = (total_flops - recompute_flops) / step_s
    return {**figures, "mfu": model / peak, "hfu": achieved / peak,
            "mfu_note": f"against {device.name}'s peak {dtype} FLOP/s"}


def _op_rows(events: list[JoinedEvent], executions: dict[str, int], op_ps: int) -> list[OpRow]:
    grouped: dict[str, list[JoinedEvent]] = {}
    for joined in events:
        grouped.setdefault(joined.matched_instruction.name, []).append(joined)
    rows = []
    for name, group in grouped.items():
        total = sum(j.self_ps for j in group)
        instruction = group[0].matched_instruction
        rows.append(OpRow(name, instruction.opcode, group[0].computation, len(group),
                          executions.get(name, 0), total / PS_PER_US,
                          total / len(group) / PS_PER_US, total / op_ps if op_ps else 0.0,
                          instruction.op_name, _source(group[0])))
    return sorted(rows, key=lambda r: (-r.self_us, r.instruction))


def _source(joined: JoinedEvent) -> str:
    if joined.program is None or joined.instruction is None:
        return ""
    file_name, line = joined.program.module.source_location(joined.instruction)
    return f"{file_name}:{line}" if file_name else ""


def _time_rows(times: dict[str, float], op_ps: int, flops_by_key: dict[str, int] | None = None,
               runs: int = 1) -> list[TimeRow]:
    rows = []
    for key, ps in sorted(times.items(), key=lambda kv: (-kv[1], kv[0])):
        per_step = (flops_by_key or {}).get(key) if flops_by_key is not None else None
        achieved = per_step * runs / (ps / 1e12) if per_step is not None and ps else None
        rows.append(TimeRow(key, ps / PS_PER_US, ps / op_ps if op_ps else 0.0, per_step,
                            achieved))
    return rows


def _program_rows(joined: Join, main: TraceProgram) -> list[ProgramRow]:
    groups: dict[tuple[str, int | None], list[JoinedEvent]] = {}
    for event in joined.events:
        groups.setdefault((event.event.module, event.event.program_id), []).append(event)
    rows = [ProgramRow(module, program, len(group), sum(j.self_ps for j in group) / PS_PER_US,
                       any(j.program is main and j.instruction is not None for j in group))
            for (module, program), group in groups.items()]
    return sorted(rows, key=lambda r: -r.self_us)


def _count_mismatches(events: list[JoinedEvent], executions: dict[str, int],
                      runs: int) -> list[str]:
    counts = Counter(j.matched_instruction.name for j in events)
    return [f"{name}: {count} events, expected {executions.get(name, 0)} x {runs} runs"
            for name, count in sorted(counts.items())
            if count % max(runs, 1) or count // max(runs, 1) % max(executions.get(name, 1), 1)]
