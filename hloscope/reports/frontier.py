"""The Report of `hloscope sweep --search frontier`: each batch's winner and every compile.

It reads the result's JSON form (`FrontierResult.to_dict()`, what frontier.json holds), so a
written frontier folder reports (and draws, `renderers.frontier_plot`) as the run did.
"""
from __future__ import annotations

from typing import Any

from hloscope.reports.report import Column, Quantity, Report, Table
from hloscope.sweeps.frontier import FrontierResult


def frontier_report(result: FrontierResult | dict[str, Any]) -> Report:
    data = result.to_dict() if isinstance(result, FrontierResult) else result
    rows = [{**row, "prediction_error": None if row["prediction_error"] is None
             else f"{row['prediction_error']:+.1%}"} for row in data["rows"]]
    table = Table("frontier", "Compiled candidates and each batch's winner (per device)", [
        Column("batch", "batch", "int"), Column("policy", "policy"),
        Column("status", "status"), Column("chosen", "chosen"),
        Column("predicted_bytes", "predicted", "bytes"),
        Column("compiled_bytes", "compiled", "bytes"),
        Column("prediction_error", "error"), Column("predicted_step_s", "step", "seconds"),
        Column("fits", "fits")], rows)
    measured = data.get("measured_names")
    tables = [table] if measured is None else [table, _measured_table(measured)]
    notes = ["predicted from compiled `full` baselines (hloscope.analyses.predict); a "
             "compiled figure replaces its prediction, and a wrong one re-ranks"]
    if measured is not None:
        notes.append("your step's names measured by compiling `full` and each name kept at "
                     f"batch {measured['batch']} (hloscope.analyses.predict.measured): one "
                     "layer's stack on one device, the recompute keeping it saves and the HBM "
                     "traffic keeping it adds (either sign; in the predicted step)")
    return Report(
        name="frontier", title="Per-tensor policy frontier",
        summary=[("capacity", Quantity(data["capacity_bytes"], "bytes")),
                 ("candidates (predicted)", data["candidates"]),
                 ("compiles (builds, cache hits included)", data["compiles"]),
                 *((f"winner at batch {b}", w or "nothing fits")
                   for b, w in data["winners"].items())],
        tables=tables, notes=notes, data=data)


def _measured_table(measured: dict[str, Any]) -> Table:
    tokens = measured["batch"] * measured["seq_len"]
    rows = [{"name": n["name"], "bytes": round(n["bytes_per_token"] * tokens),
             "flops": round(n["flops_per_token"] * tokens),
             "hbm": round(n.get("hbm_bytes_per_token", 0.0) * tokens)}
            for n in measured["names"]]
    return Table("measured_names", f"Your step's names, measured ({measured['layers']} layers, "
                 f"batch {measured['batch']})", [
                     Column("name", "name"), Column("bytes", "one layer kept", "bytes"),
                     Column("flops", "recompute saved per layer", "flops"),
                     Column("hbm", "HBM traffic added per layer", "bytes")], rows, detail=True)
