"""The Reports of `hloscope sweep` and `hloscope build`."""
from __future__ import annotations

from typing import Any

from hloscope.analyses.summary.variant import BuildSummary
from hloscope.reports.cells import not_available
from hloscope.reports.report import Column, Quantity, Report, Table
from hloscope.sweeps.core import SweepResult
from hloscope.units import format_bytes, format_flops

_VARIANT_COLUMNS = [
    Column("variant", "variant"),
    Column("outcome", "outcome"),
    Column("fits", "fits"),
    Column("batch", "batch", "int"),
    Column("required_bytes", "memory", "bytes"),
    Column("memory_fraction", "of capacity", "percent", detail=True),
    Column("live_peak_bytes", "live peak", "bytes", detail=True),
    Column("compile_seconds", "compile s", "int", detail=True),
    Column("total_flops", "FLOPs/device", "flops"),
    Column("recompute_overhead", "recompute", "percent", detail=True),
    Column("to_host_bytes", "offloaded", "bytes", detail=True),
    Column("step_seconds", "est. step s", "int"),
    Column("tokens_per_second", "tokens/s", "int"),
    Column("reason", "reason", below=True),
]
"""The variant table: the default text view keeps what ranks and fits them (120 columns for the
longest built-in policy name) and prints each reason under the table; `--details` every figure."""
_NAME_COLUMNS = [Column("variant", "variant"), Column("name", "name"),
                 Column("device_shape", "shape / device"),
                 Column("device_bytes", "bytes / device", "bytes"),
                 Column("shape", "traced (global)", drop=3),
                 Column("decision", "decision"), Column("at_peak", "at the peak", drop=2),
                 Column("source", "source", drop=1)]
NAMES_NOTE = ("checkpoint names: from the traced step (XLA's program has none: checkpoint_name "
              "compiles to nothing); shape and bytes of one call (one layer's in a layer scan) "
              "on one device (the built-in block's share under the mesh; '?' for a user step on "
              "several devices: the compile decides its sharding), and the traced global shape; "
              "decision from jax's partial evaluation of the checkpoint (or the variant's policy "
              "for names only in the forward pass); at the peak: the live buffers that may hold "
              "a kept name, by the line that made it or by a stacked buffer's per-layer shape.")
_MEASURED_COLUMNS = [Column("variant", "variant"), Column("predicted", "predicted step", "seconds"),
                     Column("measured_seconds", "measured step", "seconds"),
                     Column("error", "error", "percent"),
                     Column("tokens_per_second", "measured tokens/s", "int"),
                     Column("steps", "steps traced", "int")]
_PROBE_COLUMNS = [Column("variant", "variant"), Column("batch", "batch", "int"),
                  Column("status", "status"), Column("fits", "fits")]


def sweep_report(result: SweepResult) -> Report:
    data = result.to_dict()
    tables = [Table("variants", "Variants (figures per device; see the notes)",
                    _VARIANT_COLUMNS, [_shown(row) for row in data["variants"]])]
    if data.get("measured"):
        tables.insert(0, Table("measured", "Measured on the device (ranks the variants)",
                               _MEASURED_COLUMNS, [_measured_row(m) for m in data["measured"]]))
    tables += names_tables(data["variants"])
    if result.request.search_batch:
        tables.append(Table("probes", "Batch search: every compile", _PROBE_COLUMNS,
                            [{"variant": row["variant"], **probe} for row in data["variants"]
                             for probe in row["probes"]], detail=True))
    return Report(name="sweep", title=_title(data), summary=_summary(data), tables=tables,
                  notes=_notes(result, data), data=data,
                  detail_notes=_names_notes(data["variants"]))


UNKNOWN_MEMORY = "the target device's memory is not known"


def _measured_row(step: dict[str, Any]) -> dict[str, Any]:
    return {"variant": step["variant"], "predicted": step["predicted_seconds"],
            "measured_seconds": step["measured_seconds"], "error": step["error"],
            "tokens_per_second": round(step["tokens_per_second"]),
            "steps": len(step["step_seconds"])}


def _title(data: dict[str, Any]) -> str:
    winner = f"winner {data['winner']!r}" if data["winner"] else "no variant fits"
    return f"Sweep: {data['model']} on {data['target']} — {winner}"


def _summary(data: dict[str, Any]) -> list:
    config = data["config"]
    winner_row = next((row for row in data["variants"] if row["variant"] == data["winner"]), None)
    grid = data["grid"]
    batch = (f"searched (largest that fits, per variant), in steps of {data['batch_step']}"
             if data["search"] else _listed(grid["batch"]))
    return [
        ("winner", repr(data["winner"]) if data["winner"] else "none: no variant fits"),
        ("why", winner_row["reason"] if winner_row else ""),
        ("model", _model_line(data)),
        ("target", _sweep_target(data)),
        ("capacity per device", Quantity(data["capacity_bytes"], "bytes")
         if data["capacity_bytes"] is not None else not_available(UNKNOWN_MEMORY)),
        ("global batch", batch),
        ("sharding", _sharding(config)),
        ("compiles", f"{data['compiles']} compiled, {data['cache_hits']} from the cache, "
                     f"{data['wall_seconds']:.0f} s, on the {data['executor']} executor"
                     + _retried(data)),
    ]


def _model_line(data: dict[str, Any]) -> str:
    config, grid = data["config"], data["grid"]
    if "step" in config:  # a user's step (--step): what it is, the factory knows
        return f"your step {config['step']['factory']}, seq {_listed(grid['seq_len'])}"
    return (f"{data['model']}: {data['parameters']:,} parameters, {config['n_layers']} "
            f"layers, d_model {config['d_model']}, seq {_listed(grid['seq_len'])}")


def _listed(values: list[int]) -> str:
    given = [str(value) for value in values if value]  # 0: a user step's own
    return ", ".join(given) or "the factory's own"


def _retried(data: dict[str, Any]) -> str:
    return f"; {data['retried']} retried (a worker died)" if data["retried"] else ""


def _sharding(config: dict[str, Any]) -> str:
    if "step" in config:
        return "the step's own (its arguments' shardings)"
    parts = ["FSDP" if config["fsdp"] else "replicated parameters"]
    if config["tensor_parallel"] > 1:
        parts.append(f"tensor parallel {config['tensor_parallel']}")
    return ", ".join(parts)


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    shown = dict(row)
    if row["fits"] is None:
        shown["fits"] = "?"
    if row["tokens_per_second"] is not None:
        shown["tokens_per_second"] = round(row["tokens_per_second"])
    shown["step_seconds"] = step_cell(row)
    return shown


def step_cell(row: dict[str, Any]) -> Any:
    """The overlapped bound, then the serial one where they differ ("0.412–0.520"); '>='
    marks lower bounds."""
    overlapped, serial = row["step_seconds"], row.get("serial_seconds")
    if overlapped is None:
        return None
    if row.get("step_ranked_by") == "per-op":
        missing = (row.get("step_time") or {}).get("missing")
        return f">= {overlapped:.3f}" if missing else overlapped
    differs = serial is not None and round(serial, 3) != round(overlapped, 3)
    if not differs and not row["estimate_missing"]:
        return overlapped
    text = f"{overlapped:.3f}" + (f"–{serial:.3f}" if differs else "")
    return f">= {text}" if row["estimate_missing"] else text


def names_tables(rows: list[dict[str, Any]]) -> list[Table]:
    """The checkpoint names of each variant (none when no build recorded any)."""
    shown = [{**name, "variant": row["variant"], "shape": _shape(name),
              "device_shape": "?" if name.get("device_shape") is None
              else _shape({**name, "shape": name["device_shape"]}),
              "source": _relative(name["source"]),
              "decision": name["decision"] or "unknown", "at_peak": _at_peak(name)}
             for row in rows for name in row.get("checkpoint_names") or []]
    return ([Table("checkpoint_names", "Checkpoint names", _NAME_COLUMNS, shown, detail=True)]
            if shown else [])


def _names_notes(rows: list[dict[str, Any]]) -> list[str]:
    """NAMES_NOTE where a build recorded checkpoint names (it explains their detail table)."""
    return [NAMES_NOTE] if any(row.get("checkpoint_names") for row in rows) else []


def _relative(source: str) -> str:
    """file:line under the working folder as a relative path (the JSON keeps it whole)."""
    import os

    here = os.getcwd() + os.sep
    return source[len(here):] if source.startswith(here) else source


def _shape(name: dict[str, Any]) -> str:
    return f"{name['dtype']}[{','.join(str(d) for d in name['shape'])}]"


def _at_peak(name: dict[str, Any]) -> str:
    found = name.get("at_peak")
    if found is None:
        return ""
    if not found:
        return "no buffer found"
    return ", ".join(f"{b['buffer']}" + (f" ({b['layers']} layers)" if b["layers"] else "")
                     for b in found)


PER_OP_NOTE = ("est. step: the per-op model (docs/step-estimate.md): every op of the scheduled "
               "program timed from its FLOPs, bytes and shapes, collectives and host copies on "
               "their links beside compute, exposed where the schedule waits for them; ranked "
               "by it (tokens/s uses it); '>=' marks a lower bound (a device figure is unknown).")
ROOFLINE_NOTE = ("est. step: roofline per device from FLOPs / peak, HBM bytes / bandwidth, ICI "
                 "and DCN collective bytes / their links and host transfers / host link, as two "
                 "bounds: overlapped (the largest term: communication hidden behind compute) – "
                 "serial (compute or HBM, whichever is larger, plus every link's time); one "
                 "figure where they agree. Ranked by the overlapped bound (tokens/s uses it); "
                 "'>=' marks a lower bound (a device figure is unknown).")


def _step_note(rows: list[dict[str, Any]]) -> str:
    per_op = any(row.get("step_ranked_by") == "per-op" for row in rows)
    return PER_OP_NOTE if per_op else ROOFLINE_NOTE


def _sensitivity_line(row: dict[str, Any]) -> str | None:
    """An offload row's dependence on the host link (`sweeps.ranking.host_link_line`)."""
    return row.get("host_link_line")


def _notes(result: SweepResult, data: dict[str, Any]) -> list[str]:
    notes = list(result.notes)
    notes.append("memory: the device memory XLA's buffer assignment needs (the default memory "
                 "space of its memory-usage report: what libtpu compares with the usable HBM); "
                 "live peak: hloscope's count of logical buffers live at once, a different "
                 "figure. Fit on TPU is libtpu's verdict; on GPU the memory against 75% of the "
                 "device's (JAX's default).")
    notes.append(_step_note(data["variants"]))
    notes += [line for row in data["variants"] if (line := _sensitivity_line(row))]
    notes += _host_notes(data["variants"])
    if data["search"]:
        window = data["search_window"]
        notes.append(f"batch search: multiples of {data['batch_step']} (a batch splits evenly "
                     "over the mesh axes that shard it), doubling, bisecting, then compiling "
                     f"the {window} steps above the boundary, since libtpu's fit is not "
                     "monotonic in batch. Where a search ends at its boundary the answer fits "
                     f"and those {window} steps do not; a larger fit could only lie beyond "
                     f"{window} consecutive failures.")
    notes += _disagreements(data["variants"])
    failed = [row for row in data["variants"] if row["analysis_error"]]
    notes += [f"{row['variant']}: hloscope could not analyse the program: "
              f"{row['analysis_error']}" for row in failed]
    return notes


def _host_notes(rows: list[dict[str, Any]]) -> list[str]:
    """Where what a variant offloads was checked against its hosts' RAM, and where not."""
    return [f"{row['variant']}: {row['host_fit_reason']}" for row in rows
            if row.get("host_fit_reason") and row["host_fits"] is not False]


def _disagreements(rows: list[dict[str, Any]]) -> list[str]:
    """Notes for variants whose memory figures predict another fit than the verdict."""
    notes = []
    for key, figure in (("predicted_fits", "memory"), ("live_peak_fits", "live peak")):
        notes += [f"{row['variant']}: its {figure} says it {_fit_word(row[key])}, the verdict is "
                  f"that it {_fit_word(row['fits'])}" for row in rows
                  if None not in (row[key], row["fits"]) and row[key] != row["fits"]]
    return notes


def _fit_word(fits: bool) -> str:
    return "fits" if fits else "does not fit"


def build_report(summary: BuildSummary) -> Report:
    manifest = summary.build.manifest
    return Report(
        name="build",
        title=f"Build: {manifest['model']} / {manifest['variant']} for {manifest['target']}",
        summary=_build_summary(summary),
        tables=names_tables([{"variant": manifest["variant"],
                              **summary.figures.to_dict()}]),
        notes=[f"error: {manifest['error']}"] if manifest["error"] else [],
        detail_notes=[NAMES_NOTE] if summary.figures.checkpoint_names else [],
        data=summary.to_dict(),
    )


def _sweep_target(data: dict) -> str:
    """`tpu:v5e:2x2 (4 x TPU v5e ...)`; several slices also say slices x chips."""
    text = f"{data['target']} ({data['devices']} x {data['device']})"
    if (data.get("num_slices") or 1) > 1:
        text += f": {data['target_description']}"
    return text


def _target_lines(manifest: dict) -> list:
    """The devices (slices x chips) and, on a hybrid mesh, its axes; for older manifests none."""
    lines = []
    if manifest.get("target_description"):
        lines.append(("devices", manifest["target_description"]))
    mesh = manifest.get("mesh") or {}
    if mesh.get("hybrid"):
        lines.append(("mesh", f"DCN data {mesh['dcn_data_parallelism']} x ICI data "
                              f"{mesh['ici_data_parallelism']} x ICI FSDP "
                              f"{mesh['ici_fsdp_parallelism']} x ICI tensor "
                              f"{mesh['ici_tensor_parallelism']}"))
    flags = manifest.get("flags") or {}
    if flags.get("user") or flags.get("environment"):
        given = list(flags.get("user") or []) + [f"{k}={v}" for k, v in
                                                 (flags.get("environment") or {}).items()]
        lines.append(("XLA flags", " ".join(given)))
    return lines


def _collective_lines(hlo: Any) -> list:
    if hlo is None or getattr(hlo, "dcn_collective_bytes", None) is None:
        return []
    return [("collectives over DCN (across slices)", Quantity(hlo.dcn_collective_bytes, "bytes")),
            ("collectives over ICI (inside a slice)", Quantity(hlo.ici_collective_bytes, "bytes"))]


def _step_lines(figures: Any) -> list:
    """The per-op step's parts, the roofline's two bounds beside it, the host check."""
    lines: list = []
    timed = figures.step_time
    if timed is not None:
        exposed = ", ".join(f"{link} {seconds:.4g} s" for link, seconds in
                            timed.exposed_by_link.items() if seconds) or "none"
        lines += [("  model", "per-op (docs/step-estimate.md)"),
                  ("  mostly", timed.dominant), ("  exposed links", exposed)]
        if timed.missing:
            lines.append(("  lower bound: unknown", ", ".join(timed.missing)))
    step = figures.step
    if step is not None and step.serial_seconds is not None:
        lines += [("  roofline overlapped / serial",
                   f"{step.overlapped_seconds:.4g} / {step.serial_seconds:.4g} s"),
                  ("  roofline dominated by", step.dominant)]
        if step.missing and timed is None:
            lines.append(("  lower bound: unknown", ", ".join(step.missing)))
    if figures.host_fit is not None:
        lines.append(("pinned host memory", figures.host_fit.reason))
    return lines


def _closed_form_lines(hlo: Any) -> list:
    """The FLOPs hloscope adds for Pallas kernels XLA counts as nothing (cost/kernels.py)."""
    if hlo is None or not hlo.closed_form_kernels:
        return []
    kernels = ", ".join(sorted(set(hlo.closed_form_kernels)))
    return [("  of which kernels' closed form", Quantity(hlo.closed_form_flops, "flops")),
            ("    kernels (XLA counts them as 0)", kernels)]


def _libtpu_remat_lines(remat: Any, hlo: Any) -> list:
    """What libtpu's log says it recomputed to bring the program under its memory limit, and
    what the recompute costs: the FLOPs of XLA's `.remat` clones in the optimized program."""
    if remat is None:
        return []
    limit = (f"its limit {format_bytes(remat.limit_bytes)} ({remat.percent}% of the HBM less "
             f"unaliased arguments and overlays)")
    if remat.before_bytes is None or remat.after_bytes is None:
        lines = [("libtpu rematerialized", f"over {limit}")]
    else:
        outcome = "under it" if remat.reached else "not under it (later passes may still fit it)"
        lines = [("libtpu rematerialized",
                  f"its schedule needed {format_bytes(remat.before_bytes)} > {limit}; "
                  f"recomputed to {format_bytes(remat.after_bytes)}, {outcome}")]
    if hlo is not None and hlo.total_flops:
        share = hlo.xla_remat_flops / hlo.total_flops
        lines.append(("  its recompute", f"{format_flops(hlo.xla_remat_flops)} in XLA's .remat "
                      f"clones, {share:.1%} of the step's FLOPs"))
    return lines


def _build_summary(summary: BuildSummary) -> list:
    build, figures, cached = summary.build, summary.figures, summary.cached
    manifest = build.manifest
    hlo = figures.hlo
    return [
        ("status", figures.status),
        ("source", "the cache" if cached else "compiled"),
        ("fits", "unknown" if figures.fits is None else figures.fits),
        ("  decided by", figures.fit_source or not_available(
            UNKNOWN_MEMORY if figures.capacity_bytes is None else f"status {figures.status}")),
        ("folder", str(build.folder)),
        ("parameters", manifest["parameters"]),
        *_target_lines(manifest),
        ("global batch", figures.batch),
        ("device memory needed", Quantity(figures.required_bytes, "bytes")),
        ("  from", figures.required_source),
        *_libtpu_remat_lines(figures.libtpu_remat, hlo),
        ("capacity", Quantity(figures.capacity_bytes, "bytes")
         if figures.capacity_bytes is not None else not_available(UNKNOWN_MEMORY)),
        ("live peak", Quantity(hlo.live_peak_bytes if hlo else None, "bytes")),
        ("compile seconds", Quantity(figures.compile_seconds, "int")),
        ("FLOPs per device", Quantity(hlo.total_flops if hlo else None, "flops")),
        *_closed_form_lines(hlo),
        ("recompute overhead", Quantity(hlo.recompute_overhead if hlo else None, "percent")),
        *_collective_lines(hlo),
        ("estimated step seconds", Quantity(figures.step_seconds, "int")
         if figures.step_seconds is not None else not_available(
             "no roofline: the device's peak FLOP/s and bandwidth are not known" if hlo
             else "no compiled program to analyse")),
        *_step_lines(figures),
        ("fingerprint", figures.fingerprint),
    ]
