"""GitHub-flavoured Markdown: the title as a heading, the summary as a bullet list, each table as a
pipe table under its own heading (numbers right-aligned), and notes as a list under "Notes"."""
from __future__ import annotations

from tabulate import tabulate

from hloscope.reports.cells import human_cell, summary_cell
from hloscope.reports.report import Report, SummaryValue, Table


def render(report: Report) -> str:
    blocks = [f"# {_inline(report.title)}"]
    if report.summary:
        blocks.append(_summary(report.summary))
    blocks.extend(_table(table) for table in report.tables)
    if report.every_note:
        blocks.append("## Notes\n\n" + "\n".join(f"- {_inline(note)}"
                                                  for note in report.every_note))
    return "\n\n".join(blocks) + "\n"


def _summary(summary: list[tuple[str, SummaryValue]]) -> str:
    return "\n".join(f"- **{_inline(key)}:** {_inline(summary_cell(value))}"
                     for key, value in summary)


def _table(table: Table) -> str:
    heading = f"## {_inline(table.title)}"
    if not table.rows:
        return f"{heading}\n\n_(none)_"
    headers = [_cell(column.header) for column in table.columns]
    rows = [[_cell(human_cell(row.get(c.key), c.kind)) for c in table.columns]
            for row in table.rows]
    align = ["right" if column.is_numeric else "left" for column in table.columns]
    body = tabulate(rows, headers, tablefmt="pipe", colalign=align, disable_numparse=True)
    return f"{heading}\n\n{body}"


def _inline(text: str) -> str:
    """Keeps a value on one line."""
    return " ".join(text.split("\n"))


def _cell(text: str) -> str:
    """A pipe-table cell: one line, with `|` escaped."""
    return _inline(text).replace("|", "\\|")
