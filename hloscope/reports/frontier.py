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
    return Report(
        name="frontier", title="Per-tensor policy frontier",
        summary=[("capacity", Quantity(data["capacity_bytes"], "bytes")),
                 ("candidates (predicted)", data["candidates"]),
                 ("compiles (builds, cache hits included)", data["compiles"]),
                 *((f"winner at batch {b}", w or "nothing fits")
                   for b, w in data["winners"].items())],
        tables=[table],
        notes=["predicted from compiled `full` baselines (hloscope.analyses.predict); a "
               "compiled figure replaces its prediction, and a wrong one re-ranks"],
        data=data)
