"""Reports: the one `Report` type every command renders, its renderers and where they write.

    report = Report(name="inspect", title="...", summary=[...], tables=[...], data=result.to_dict())
    write_report(report, "json", "out.json", force=False)

Analyses build typed results; a factory per command turns a result into a Report; renderers
(`registry.FORMATS`) only format it.
"""
from __future__ import annotations

from hloscope.reports.output import check_writable, write_report
from hloscope.reports.registry import FORMATS, OutputFormat, render, resolve_format
from hloscope.reports.report import Column, ColumnKind, Quantity, Report, Table, schema_id

__all__ = [
    "FORMATS",
    "Column",
    "ColumnKind",
    "OutputFormat",
    "Quantity",
    "Report",
    "Table",
    "check_writable",
    "render",
    "resolve_format",
    "schema_id",
    "write_report",
]
