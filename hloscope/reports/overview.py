"""The Reports `hloscope report` shows: one input's summary, its live buffers, its FLOPs by layer
and phase, and — for several inputs — the side-by-side comparison and the sweep's verdict."""
from __future__ import annotations

from typing import Any

from hloscope.analyses.summary.overview import ModuleOverview, Verdict
from hloscope.formats.sweep import SweepRecord
from hloscope.reports.cells import not_available
from hloscope.reports.flops import breakdown_table, closed_form_notes
from hloscope.reports.memory import group_table, live_table, peak_position
from hloscope.reports.report import Column, Quantity, Report, SummaryValue, Table

_COMPARISON_COLUMNS = [
    Column("input", "input"), Column("backend", "backend"), Column("fits", "fits"),
    Column("instructions", "instructions", "int"), Column("flops", "FLOPs/device", "flops"),
    Column("bytes_accessed", "bytes accessed", "bytes"),
    Column("peak_bytes", "live peak", "bytes"),
    Column("allocation_bytes", "XLA allocation", "bytes"),
    Column("remat_instructions", "recomputed (jax)", "int"),
    Column("xla_remat_instructions", "XLA remat clones", "int"),
    Column("recompute_overhead", "recompute", "percent"),
]


def summary_report(item: ModuleOverview) -> Report:
    memory, costs, remat = item.memory, item.flops.total, item.remat
    summary: list = [
        ("source", item.inspect.source), ("module", item.inspect.module_name),
        ("backend", memory.backend if memory else "unknown"),
        ("instructions", Quantity(item.inspect.instruction_count, "int")),
        ("partitions x replicas",
         f"{item.inspect.num_partitions} x {item.inspect.replica_count}"),
        ("FLOPs per device", Quantity(costs.flops, "flops")),
        ("bytes accessed", Quantity(costs.bytes_accessed, "bytes")),
        ("live peak (device)", Quantity(memory.peak_bytes, "bytes") if memory
         else item.memory_note),
    ]
    if memory is not None and memory.xla is not None:
        summary += [("XLA live-range dump (a moment it picks, all spaces)",
                     Quantity(memory.xla.live_peak_bytes, "bytes")),
                    ("XLA allocation (buffer assignment)",
                     Quantity(memory.xla.allocation_bytes, "bytes"))]
    summary += [("recomputed instructions (jax / XLA pass)",
                 f"{remat.remat_instructions} / {remat.xla_remat_instructions}"),
                ("recompute overhead", Quantity(remat.recompute_overhead, "percent"))]
    return Report(name="overview", title=f"Summary: {item.label}", summary=summary,
                  data={"label": item.label})


def buffers_report(item: ModuleOverview, top: int) -> Report:
    """The live set at the peak: by category, then the largest buffers."""
    memory = item.memory
    if memory is None:
        return Report(name="memory", title="Buffers live at the peak", notes=[item.memory_note])
    return Report(name="memory", title="Top live buffers at the peak",
                  summary=[("peak at", f"{peak_position(memory)} ({memory.peak_phase})")],
                  tables=[group_table(memory, "category"), live_table(memory.live_at_peak, top)],
                  notes=[f"{memory.basis}."])


def flops_report(item: ModuleOverview) -> Report:
    total = item.flops.total.flops
    return Report(name="flops", title="FLOPs by layer and phase",
                  tables=[breakdown_table(item.flops.rows(by), by, total, None)
                          for by in ("layer", "phase")],
                  notes=closed_form_notes(item.flops))


def comparison_report(overviews: list[ModuleOverview], verdict: Verdict,
                      capacity: int | None) -> Report:
    rows = [_comparison_row(item, verdict) for item in overviews]
    summary: list = [("inputs", len(overviews)),
                     ("capacity per device", Quantity(capacity, "bytes") if capacity
                      else not_available("no --device or --capacity given")),
                     ("fastest that fits", verdict.winner or "none"), ("why", verdict.reason)]
    return Report(name="comparison", title="Side by side", summary=summary,
                  tables=[Table("inputs", "Inputs (figures per device)", _COMPARISON_COLUMNS,
                                rows)],
                  notes=["fits: XLA's allocation (else the live peak) against the capacity"])


def _comparison_row(item: ModuleOverview, verdict: Verdict) -> dict[str, Any]:
    fits = verdict.fits.get(item.label)
    return {"input": item.label, "backend": item.memory.backend if item.memory else "",
            "fits": "?" if fits is None else fits,
            "instructions": item.inspect.instruction_count, "flops": item.flops.total.flops,
            "bytes_accessed": item.flops.total.bytes_accessed, "peak_bytes": item.peak_bytes,
            "allocation_bytes": item.allocation_bytes,
            "remat_instructions": item.remat.remat_instructions,
            "xla_remat_instructions": item.remat.xla_remat_instructions,
            "recompute_overhead": item.remat.recompute_overhead}


_SWEEP_COLUMNS = [
    Column("variant", "variant"), Column("outcome", "outcome"), Column("fits", "fits"),
    Column("batch", "batch", "int"), Column("required_bytes", "memory", "bytes"),
    Column("live_peak_bytes", "live peak", "bytes"),
    Column("total_flops", "FLOPs/device", "flops"),
    Column("recompute_overhead", "recompute", "percent"),
    Column("tokens_per_second", "tokens/s", "int"), Column("reason", "reason"),
]


def sweep_verdict_report(sweep: SweepRecord) -> Report:
    """The verdict of a `hloscope sweep -o DIR` folder, from its sweep.json."""
    winner = sweep.winner
    row = next((r for r in sweep.variants if r.variant == winner), None)
    summary: list[tuple[str, SummaryValue]] = [
        ("model", sweep.model or ""), ("target", sweep.target or ""),
        ("capacity per device", Quantity(sweep.capacity_bytes, "bytes")),
        ("fastest that fits", winner or "none: no variant fits"),
        ("why", row.row.get("reason", "") if row else "")]
    rows = [{**r.row, "fits": "?" if r.fits is None else r.fits} for r in sweep.variants]
    return Report(name="sweep", title="Sweep verdict: the fastest variant that fits",
                  summary=summary, tables=[Table("variants", "Variants", _SWEEP_COLUMNS, rows)],
                  notes=list(sweep.notes))
