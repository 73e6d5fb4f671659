"""The sweep table's "est. step s" cell: the overlapped bound, then the serial one."""
from __future__ import annotations

from hloscope.reports.sweep import step_cell


def test_both_bounds_where_they_differ() -> None:
    row = {"step_seconds": 0.4123, "serial_seconds": 0.52, "estimate_missing": []}
    assert step_cell(row) == "0.412–0.520"
    assert step_cell({**row, "estimate_missing": ["host-link bandwidth"]}) == ">= 0.412–0.520"


def test_one_figure_where_they_agree() -> None:
    row = {"step_seconds": 0.66, "serial_seconds": 0.66, "estimate_missing": []}
    assert step_cell(row) == 0.66  # a number: rendered as before
    assert step_cell({**row, "estimate_missing": ["x"]}) == ">= 0.660"
    assert step_cell({"step_seconds": None, "estimate_missing": []}) is None
