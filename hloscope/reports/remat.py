"""The Report of `hloscope remat`: what is recomputed, what it costs, and where."""
from __future__ import annotations

from hloscope.analyses.cost.remat import RematResult
from hloscope.reports.flops import breakdown_table
from hloscope.reports.report import Quantity, Report


def remat_report(result: RematResult, by: str = "layer", top: int | None = None) -> Report:
    table = breakdown_table(result.rows(by), by, result.recompute_flops, top)
    table.title = f"Recomputation by {'source scope' if by == 'scope' else by}"
    return Report(
        name="remat",
        title=f"Rematerialization in {result.module_name}",
        summary=_summary(result),
        tables=[table],
        notes=_notes(result),
        data={**result.to_dict(), "by": by},
    )


def _summary(result: RematResult) -> list:
    return [
        ("source", result.source),
        ("recomputed instructions (jax.checkpoint)", result.remat_instructions),
        ("fusions holding them", result.remat_fusions),
        ("XLA remat clones (.remat)", result.xla_remat_instructions),
        ("recompute FLOPs", Quantity(result.recompute_flops, "flops")),
        ("forward FLOPs", Quantity(result.forward_flops, "flops")),
        ("recompute overhead", Quantity(result.recompute_overhead, "percent")),
        ("recompute bytes accessed", Quantity(result.recompute_bytes_accessed, "bytes")),
        ("FLOPs XLA's clones add", Quantity(result.xla_remat_flops, "flops")),
    ]


def _notes(result: RematResult) -> list[str]:
    notes = ["recompute overhead = recompute FLOPs / forward FLOPs; loop trip counts applied"]
    if not result.remat_instructions and not result.xla_remat_instructions:
        notes.append("no recomputation: no op is under jax.checkpoint's rematted_computation "
                     "and no instruction carries XLA's .remat suffix")
    if result.xla_clones:
        shown = ", ".join(result.xla_clones[:10])
        more = len(result.xla_clones) - 10
        notes.append(f"XLA remat clones: {shown}" + (f" and {more} more" if more > 0 else ""))
    return notes
