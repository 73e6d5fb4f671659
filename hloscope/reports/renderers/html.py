"""HTML: a Report as a self-contained page (`--format html`), and the pieces `hloscope report`
builds its page from.

Everything that comes from the input (names, op_names, shapes, notes) is escaped with
`html.escape`; the only markup not made here is inline SVG from matplotlib (`html_figures`).
The page loads nothing: the style sheet is inline, there is no script, and the icon is an
empty data URL (so a browser does not ask for /favicon.ico). Numbers are shown as the text
formats show them (binary byte units, SI FLOPs); each numeric cell keeps the raw value in
`data-value` so the page can be checked against the JSON document. Tables wrap long cells
rather than scroll sideways, and a long table scrolls inside a box of capped height (its header
row stays in view), so a page stays about as tall as its content is useful.
"""
from __future__ import annotations

from html import escape

from hloscope.reports.cells import human_cell, raw_cell, summary_cell
from hloscope.reports.report import ColumnKind, Report, SummaryValue, Table

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1200px;
       padding: 0 24px 48px; color: #1d1d1f; background: #fff; }
h1 { font-size: 24px; margin: 24px 0 4px; } h2 { font-size: 20px; margin: 32px 0 8px;
  border-bottom: 1px solid #ddd; padding-bottom: 4px; } h3 { font-size: 16px; margin: 20px 0 6px; }
div.table { max-height: 360px; overflow-y: auto; margin: 6px 0 12px; }
table { border-collapse: collapse; font-size: 13px; width: 100%; }
th, td { border: 1px solid #d8d8d8; padding: 3px 8px; text-align: left; vertical-align: top;
         overflow-wrap: anywhere; }
th { position: sticky; top: 0; }
details > summary { cursor: pointer; } details > summary h2 { display: inline; border: 0; }
th { background: #f2f4f7; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
dl.summary { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; }
dl.summary dt { color: #555; } dl.summary dd { margin: 0; font-weight: 600; }
ul.notes { color: #555; font-size: 13px; } figure { margin: 8px 0 16px; } figure svg {
  max-width: 100%; height: auto; } .verdict { font-size: 18px; padding: 8px 12px;
  background: #eef7ee; border-left: 4px solid #55a868; } .verdict.none { background: #fbeeee;
  border-left-color: #c44e52; } nav a { margin-right: 12px; } .muted { color: #777; }
"""


def render(report: Report) -> str:
    """A whole page holding one report."""
    return page(report.title, report_html(report, level=1))


def page(title: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{escape(title)}</title>\n<link rel=\"icon\" href=\"data:,\">\n"
            f"<style>{STYLE}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n")


def report_html(report: Report, level: int = 2) -> str:
    """The report's title, summary, tables and notes as HTML (headings from `level`)."""
    parts = [heading(report.title, level)]
    if report.summary:
        parts.append(summary_html(report.summary))
    parts += [table_html(table, level + 1) for table in report.tables]
    parts.append(notes_html(report.every_note))
    return "\n".join(part for part in parts if part)


def heading(text: str, level: int, anchor: str | None = None) -> str:
    level = min(max(level, 1), 6)
    identifier = f' id="{escape(anchor)}"' if anchor else ""
    return f"<h{level}{identifier}>{escape(text)}</h{level}>"


def summary_html(summary: list[tuple[str, SummaryValue]]) -> str:
    items = "".join(f"<dt>{escape(key)}</dt><dd>{escape(summary_cell(value))}</dd>"
                    for key, value in summary)
    return f'<dl class="summary">{items}</dl>'


def table_html(table: Table, level: int = 3) -> str:
    if not table.rows:
        return f"{heading(table.title, level)}\n<p class=\"muted\">(none)</p>"
    head = "".join(f'<th{_num(c.is_numeric)}>{escape(c.header)}</th>' for c in table.columns)
    rows = "".join("<tr>" + "".join(_cell(row.get(c.key), c.kind, c.is_numeric)
                                    for c in table.columns) + "</tr>" for row in table.rows)
    return (f'{heading(table.title, level)}\n<div class="table">'
            f'<table data-table="{escape(table.name)}">'
            f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>")


def _cell(value: object, kind: ColumnKind, numeric: bool) -> str:
    shown = escape(human_cell(value, kind))
    if not numeric:
        return f"<td>{shown}</td>"
    return f'<td class="num" data-value="{escape(str(raw_cell(value)))}">{shown}</td>'


def _num(numeric: bool) -> str:
    return ' class="num"' if numeric else ""


def notes_html(notes: list[str]) -> str:
    if not notes:
        return ""
    return '<ul class="notes">' + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>"
