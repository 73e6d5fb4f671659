"""The Report of `hloscope oom`: verdict, what is live at the peak, where, and the remedies.

Human formats show the verdict and margin, the categories, the largest groups (by layer), the
steps around the peak, the remedies (predicted, and compiled when a sweep gave them) and the
closed-form view beside the compiled one. CSV holds the remedies table; JSON the whole
diagnosis (schema hloscope/oom/v1).
"""
from __future__ import annotations

from hloscope.analyses.oom.diagnosis import OomDiagnosis
from hloscope.reports.memory import peak_position
from hloscope.reports.report import Column, Quantity, Report, Table
from hloscope.units import format_bytes, format_flops

_REMEDY_COLUMNS = [
    Column("rank", "rank", "int"), Column("name", "remedy"), Column("change", "change", drop=2),
    Column("predicted_bytes", "predicted peak", "bytes"),
    Column("compiled_bytes", "compiled peak", "bytes", drop=1),
    Column("prediction_error", "error", "percent", drop=1), Column("fits", "fits"),
    Column("host_bytes", "pinned host/device", "bytes", drop=1),
    Column("host_fits", "host fits", drop=1),
    Column("extra_flops", "extra FLOPs", "flops"),
    Column("extra_flops_fraction", "of step", "percent"), Column("cost", "cost", drop=2),
]


def oom_report(diagnosis: OomDiagnosis) -> Report:
    tables = [remedy_table(diagnosis), category_table(diagnosis), group_table(diagnosis),
              around_table(diagnosis)]
    return Report(name="oom", title=_title(diagnosis), summary=_summary(diagnosis),
                  tables=[t for t in tables if t.rows], notes=_notes(diagnosis),
                  data=diagnosis.to_dict())


def _title(diagnosis: OomDiagnosis) -> str:
    verdict = {True: "fits", False: "does not fit", None: "fit unknown"}[diagnosis.fits]
    return f"Out of memory? {diagnosis.module_name}: {verdict}"


def _summary(diagnosis: OomDiagnosis) -> list:
    required, capacity = diagnosis.required, diagnosis.capacity
    label = "peak (estimate)" if required.estimate else "peak"
    summary: list = [("verdict", _verdict(diagnosis)),
                     (f"{label} per device", Quantity(required.bytes, "bytes")),
                     ("  from", required.basis)]
    if capacity is not None:
        summary += [("capacity per device", Quantity(capacity.bytes, "bytes")),
                    ("  from", capacity.source)]
    if diagnosis.memory_analysis_bytes is not None:
        label = ("memory_analysis() (libtpu's count, not its fit criterion)"
                 if diagnosis.backend == "tpu" else "memory_analysis()")
        summary.append((label, Quantity(diagnosis.memory_analysis_bytes, "bytes")))
    if diagnosis.compiler_verdict:
        summary.append(("compiler", diagnosis.compiler_verdict))
    result = diagnosis.memory
    summary += [("live peak", Quantity(result.peak_bytes, "bytes")),
                ("peak happens", f"{result.peak_phase or 'unknown phase'}, at "
                                 f"{peak_position(result)}"),
                ("  op_name", result.peak_op_name or "(none)")]
    summary += _sharding_lines(diagnosis) + _analytic_lines(diagnosis)
    return summary


def _verdict(diagnosis: OomDiagnosis) -> str:
    margin = diagnosis.margin_bytes
    if diagnosis.fits is None:
        return "unknown (no capacity)"
    if diagnosis.fits:
        return f"fits, {format_bytes(margin or 0)} to spare"
    over = f"over by {format_bytes(-margin)}" if margin is not None and margin < 0 else ""
    return f"does not fit {over}".rstrip()


def _sharding_lines(diagnosis: OomDiagnosis) -> list:
    found = diagnosis.sharding
    lines: list = []
    if found.partitions > 1 and found.replicated_state_bytes:
        lines.append(("replicated state", f"{format_bytes(found.replicated_state_bytes)} of "
                      f"weights and optimizer state on every device ({found.partitions} "
                      f"partitions); sharding it would free "
                      f"{format_bytes(found.savings_if_sharded(found.partitions))}"))
    if found.gathered_live_buffers:
        lines.append(("gathered weights live", f"{format_bytes(found.gathered_live_bytes)} in "
                      f"{found.gathered_live_buffers} all-gather outputs at the peak"))
    return lines


def _analytic_lines(diagnosis: OomDiagnosis) -> list:
    view = diagnosis.analytic
    if view is None:
        return []
    measured = diagnosis.measured_saved_per_layer
    compiled = "n/a" if measured is None else format_bytes(measured)
    state = view.state
    return [
        ("activations per layer", f"closed form {format_bytes(view.per_layer_bytes)}, "
                                  f"compiled {compiled} (local batch {view.local_batch}); "
                                  f"Korthikanti et al. {format_bytes(view.korthikanti_bytes)}"),
        ("loss head", f"{view.loss} loss keeps {format_bytes(view.loss_saved_bytes)}, holds "
                      f"{format_bytes(view.loss_chunk_bytes)} of logits at once; "
                      f"{view.attention} attention"),
        ("model state per parameter", f"{state.total} B = {state.parameter} parameter + "
                                      f"{state.master} master + {state.moments} moments + "
                                      f"{state.gradient} gradient (ZeRO textbook: 16 B)"),
    ]


def category_table(diagnosis: OomDiagnosis) -> Table:
    columns = [Column("category", "category"), Column("bytes", "bytes", "bytes"),
               Column("share", "share", "percent"), Column("buffers", "buffers", "int")]
    return Table("by_category", "Live at the peak, per device, by category", columns,
                 [part.to_dict() for part in diagnosis.by_category])


def group_table(diagnosis: OomDiagnosis) -> Table:
    columns = [Column("label", "largest live groups"), Column("bytes", "bytes", "bytes"),
               Column("layers", "layers", "int"), Column("buffers", "buffers", "int")]
    return Table("top_groups", "Largest buffers live at the peak, grouped by layer", columns,
                 [group.to_dict() for group in diagnosis.top_groups])


def around_table(diagnosis: OomDiagnosis) -> Table:
    columns = [Column("time", "time", "int"), Column("instruction", "instruction"),
               Column("opcode", "opcode"), Column("phase", "phase"),
               Column("live_bytes", "live", "bytes"),
               Column("inner_peak_bytes", "inner peak", "bytes")]
    return Table("around_peak", "Steps around the peak", columns,
                 [step.to_dict() for step in diagnosis.around_peak], detail=True)


def remedy_table(diagnosis: OomDiagnosis) -> Table:
    return Table("remedies", "Remedies, cheapest first (predicted; compiled when a sweep "
                 "gave it)", _REMEDY_COLUMNS, [r.to_dict() for r in diagnosis.remedies])


def _notes(diagnosis: OomDiagnosis) -> list[str]:
    notes = list(diagnosis.notes)
    if diagnosis.remedies:
        notes.append("predicted peaks are estimates from the live set at the peak (docs/oom.md);"
                     " compiled peaks are XLA's figure for the compiled variant; error is "
                     "predicted / compiled - 1")
        flops = [r for r in diagnosis.remedies if r.extra_flops]
        if flops:
            notes.append("extra FLOPs are the forward work a remat policy recomputes, per device"
                         f" (largest: {format_flops(max(r.extra_flops for r in flops))})")
    return notes
