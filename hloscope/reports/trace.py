"""The Report of `hloscope trace`: headline figures, one breakdown table, and what to look at."""
from __future__ import annotations

from dataclasses import asdict

from hloscope.analyses.trace.analysis import OpRow, TraceResult
from hloscope.analyses.trace.join import IN_COMMAND_BUFFERS
from hloscope.reports.paths import with_relative_sources
from hloscope.reports.report import Column, Quantity, Report, Table

BREAKDOWNS = ("phase", "scope", "layer", "op")
_TITLES = {"phase": "phase", "scope": "source scope", "layer": "layer", "op": "instruction"}


def trace_report(result: TraceResult, by: str = "phase", top: int | None = None) -> Report:
    return Report(
        name="trace",
        title=f"Trace of {result.module_name}: measured time joined to the HLO",
        summary=_summary(result),
        tables=[_table(result, by, top), _programs(result)],
        notes=_notes(result, by),
        data={**result.to_dict(), "by": by},
    )


def _summary(result: TraceResult) -> list:
    steps = ", ".join(f"{t / 1000:.2f}" for t in result.step_times_us)
    summary = [
        ("trace", f"{result.source} ({result.kind})"),
        ("program", f"{result.module_name} (program id {result.program_id})"),
        ("HLO", result.hlo_origin),
        ("steps", result.steps),
        ("step times ms", steps or "n/a"),
        ("op time / wall time", Quantity(result.op_time_us / result.wall_us
                                         if result.wall_us else None, "ratio")),
        ("op time joined to the HLO", Quantity(1 - result.unmatched_share, "percent")),
        ("remat time share", Quantity(result.remat_time_share, "percent")),
        ("FLOPs per step", Quantity(result.flops_per_step, "flops")),
        ("recomputed FLOPs per step", Quantity(result.recompute_flops_per_step, "flops")),
        ("achieved FLOP/s", Quantity(result.achieved_flops_per_s, "flop_rate")),
    ]
    if result.mfu is not None:
        summary += [("MFU", Quantity(result.mfu, "percent")),
                    ("HFU", Quantity(result.hfu, "percent"))]
    summary.append(("MFU / HFU", result.mfu_note))
    extra = dict(result.extra)
    note = extra.pop("xprof_note", None)
    for key, value in extra.items():
        shown = note if value is None and key == "xprof_peak_heap_bytes" else _extra(value)
        summary.append((key.replace("_", " "), shown))
    return summary


def _extra(value: object) -> object:
    return Quantity(value, "bytes") if isinstance(value, int) else value


def _table(result: TraceResult, by: str, top: int | None) -> Table:
    rows = result.rows(by)
    shown = rows if top is None else rows[:top]
    if by == "op":
        columns = [Column("instruction", "instruction"), Column("opcode", "opcode"),
                   Column("self_us", "self µs", "int"), Column("share", "share", "percent"),
                   Column("mean_us", "mean µs", "int"), Column("events", "events", "int"),
                   Column("executions_per_step", "per step (HLO)", "int"),
                   Column("computation", "computation", drop=1),
                   Column("op_name", "op_name", drop=1), Column("source", "source", drop=1)]
        values = with_relative_sources([_op_row(r) for r in shown])
    else:
        columns = [Column("key", _TITLES[by]), Column("self_us", "self µs", "int"),
                   Column("share", "share", "percent")]
        if by == "phase":
            columns += [Column("flops_per_step", "FLOPs per step", "flops"),
                        Column("achieved_flops_per_s", "achieved FLOP/s", "flop_rate")]
        values = [{"key": r.key, "self_us": round(r.self_us), "share": r.share,
                   "flops_per_step": r.flops_per_step,
                   "achieved_flops_per_s": r.achieved_flops_per_s} for r in shown]
    return Table(f"by_{by}", f"Op self time by {_TITLES[by]}", columns, values)


def _op_row(row: OpRow) -> dict:
    data = asdict(row)
    data["self_us"], data["mean_us"] = round(data["self_us"]), round(data["mean_us"])
    data["computation"] = demangle(row.computation)
    return data


_PASS_TOKENS = frozenset({"wide", "clone", "sunk"})


def demangle(computation: str) -> str:
    """A computation's name as the program named it: XLA's passes add `wide.` prefixes (while
    loop simplification), `.clone` and `.sunk` suffixes and `.N` uniquing numbers, so
    `wide.wide.region_26.89.clone.sunk` is `region_26`; `.remat` clones keep their mark."""
    tokens = [t for t in computation.split(".") if t not in _PASS_TOKENS]
    kept = tokens[:1] + [t for t in tokens[1:] if not t.isdigit()]
    return ".".join(kept) or computation


def _programs(result: TraceResult) -> Table:
    columns = [Column("module", "module"), Column("program_id", "program id", "int"),
               Column("events", "op events", "int"), Column("self_us", "self µs", "int"),
               Column("joined", "analysed")]
    rows = [{"module": p.module or "(none)", "program_id": p.program_id, "events": p.events,
             "self_us": round(p.self_us), "joined": "yes" if p.joined else "no"}
            for p in result.programs]
    return Table("programs", "Programs in the trace", columns, rows)


_NAME_THEM = {IN_COMMAND_BUFFERS: "; profile with XLA_FLAGS=--xla_gpu_enable_command_buffer= "
                                   "to name them"}


def _unmatched_notes(result: TraceResult) -> list[str]:
    """What share of the program's op time joined no instruction, and why."""
    total_us = result.op_time_us + result.unmatched_us
    notes = [f"warning: {us / total_us:.1%} of op time ({us:,.0f} µs) in {reason} could not "
             f"be joined to an instruction{_NAME_THEM.get(reason, '')}"
             for reason, us in result.unmatched_by_reason.items() if total_us]
    if notes:
        notes.append("a phase's achieved FLOP/s counts all its FLOPs over its joined time only, "
                     "so it is too high where the time of its instructions was not joined")
    return notes


def _notes(result: TraceResult, by: str) -> list[str]:
    notes = [f"warning: {w}" for w in result.warnings]
    notes.append("self time: an op's duration less its children's (a while or call encloses "
                 "its body); op time sums self times over threads, so it can exceed wall time")
    notes.append("remat time share: op self time in recomputed work (JAX's "
                 "rematted_computation, XLA's .remat clones) over all op self time")
    notes.append("FLOPs are static (hloscope flops, loops times trip counts); an op's time is "
                 "split among its fused instructions like its FLOPs")
    notes += _unmatched_notes(result)
    if result.count_mismatches:
        shown = "; ".join(result.count_mismatches[:5])
        notes.append(f"warning: {len(result.count_mismatches)} instructions ran a number of "
                     f"times the HLO does not predict (a cut trace?): {shown}")
    if by == "scope" and result.scope_prefix:
        notes.append(f"scopes are shown below {result.scope_prefix}/")
    return notes
