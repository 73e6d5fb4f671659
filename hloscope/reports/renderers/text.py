"""Plain text for terminals: a title line, the summary as aligned `key: value` lines, each table
under its title (tabulate's "simple" style, numbers right-aligned), and notes prefixed "note:"."""
from __future__ import annotations

from tabulate import tabulate

from hloscope.reports.cells import human_cell
from hloscope.reports.report import Report, SummaryValue, Table


def render(report: Report) -> str:
    blocks = [report.title]
    if report.summary:
        blocks.append(_summary(report.summary))
    blocks.extend(_table(table) for table in report.tables)
    if report.notes:
        blocks.append("\n".join(_note(note) for note in report.notes))
    return "\n\n".join(blocks) + "\n"


def _summary(summary: list[tuple[str, SummaryValue]]) -> str:
    width = max(len(key) for key, _ in summary) + 1
    return "\n".join(f"{key + ':':<{width}}  {human_cell(value)}" for key, value in summary)


def _table(table: Table) -> str:
    if not table.rows:
        return f"{table.title}\n(none)"
    headers = [column.header for column in table.columns]
    rows = [[human_cell(row.get(c.key), c.kind) for c in table.columns] for row in table.rows]
    align = ["right" if column.is_numeric else "left" for column in table.columns]
    body = tabulate(rows, headers, tablefmt="simple", colalign=align, disable_numparse=True)
    return f"{table.title}\n{body}"


def _note(note: str) -> str:
    return "note: " + note.replace("\n", "\n      ")
