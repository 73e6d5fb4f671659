"""CSV: the report's first table only — the primary table — with the column keys as the header
and raw values in the cells (bytes and FLOPs as integers, fractions as fractions), so spreadsheets
and pandas read numbers. The summary, other tables and notes are left out: a CSV file holds one
table; use JSON for the whole result. A report without tables cannot be written as CSV.
Lines end with "\\n".
"""
from __future__ import annotations

import csv
import io

from hloscope.errors import UsageError
from hloscope.reports.cells import raw_cell
from hloscope.reports.report import Report


def render(report: Report) -> str:
    table = report.primary_table
    if table is None:
        raise UsageError(f"the {report.name} report has no table to write as CSV; "
                         "use --format json")
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([column.key for column in table.columns])
    for row in table.rows:
        writer.writerow([raw_cell(row.get(column.key)) for column in table.columns])
    return buffer.getvalue()
