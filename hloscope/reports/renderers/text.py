"""Plain text for terminals: a title line, the summary as aligned `key: value` lines, each table
under its title (tabulate's "simple" style, numbers right-aligned), and notes prefixed "note:".

Without `details` (the CLI's default) the page is the short view: detail tables, detail columns
and detail notes are left out (a last line says what `--details` adds), and a `below` column (a
long description per row) is printed under its table as `row: text` lines, not as a column.

With a `width` (the terminal's, see `cli.common.terminal_width`), the page fits it: long text
cells are cut to `TEXT_CELL` characters with an ellipsis, and if a table is still too wide its
columns are hidden, those marked to go first (`Column.drop`, e.g. long descriptions) before the
rest, each from the right (reports put the columns that matter first; the first column always
stays), a line under the table naming what `--wide` would show; summary values and notes wrap
under their indent. Without a width (a file, a pipe, `--wide`), nothing is cut.
"""
from __future__ import annotations

import textwrap

from tabulate import tabulate

from hloscope.reports.cells import human_cell, summary_cell
from hloscope.reports.report import Column, Report, SummaryValue, Table

TEXT_CELL = 40
"""The longest text cell shown when the table must fit a width (op_names, shapes, sources)."""
ELLIPSIS = "…"


def render(report: Report, width: int | None = None, details: bool = True) -> str:
    blocks = [_wrap(report.title, width, "  ")]
    if report.summary:
        blocks.append(_summary(report.summary, width))
    shown = [table for table in report.tables if details or not table.detail]
    blocks.extend(_table(table, width, details) for table in shown)
    notes = report.every_note if details else report.notes
    if notes:
        blocks.append("\n".join(_note(note, width) for note in notes))
    if not details and (more := _details_line(report, len(shown))):
        blocks.append(_wrap(more, width, " "))
    return "\n\n".join(blocks) + "\n"


def _details_line(report: Report, shown: int) -> str:
    """What `--details` would add: hidden columns and tables (empty when nothing is hidden)."""
    hidden = [table.title for table in report.tables if table.detail]
    columns = any(column.detail for table in report.tables[:shown] if not table.detail
                  for column in table.columns)
    if not hidden and not columns:
        return ""
    parts = ["every column"] if columns else []
    if hidden:
        parts.append(f"{len(hidden)} more table{'s' if len(hidden) > 1 else ''}: "
                     + ", ".join(hidden))
    return f"(--details shows {' and '.join(parts)})"


def _summary(summary: list[tuple[str, SummaryValue]], width: int | None) -> str:
    indent = max(len(key) for key, _ in summary) + 3
    lines = []
    for key, value in summary:
        shown = summary_cell(value)
        line = f"{key + ':':<{indent - 2}}  {shown}"
        lines.append(_split_token(line, width, indent) if len(shown.split()) == 1
                     else _wrap(line, width, " " * indent))
    return "\n".join(lines)


def _split_token(line: str, width: int | None, indent: int) -> str:
    """A value of one long token (a path) split at the width and continued under its indent,
    rather than moved whole to the next line."""
    if width is None or len(line) <= width or width <= indent:
        return line
    room = width - indent
    pieces = [line[i:i + room] for i in range(indent, len(line), room)]
    return "\n".join([line[:indent] + pieces[0], *(" " * indent + piece for piece in pieces[1:])])


def _table(table: Table, width: int | None, details: bool = True) -> str:
    if not table.rows:
        return f"{_wrap(table.title, width, '  ')}\n(none)"
    columns = [c for c in table.columns if details or not (c.detail or c.below)]
    below = [] if details else [c for c in table.columns if c.below and not c.detail]
    text = f"{_wrap(table.title, width, '  ')}\n{_fitted(columns, table.rows, width)}"
    return "\n\n".join([text, *(_below(column, table, width) for column in below)])


def _fitted(columns: list[Column], rows: list[dict], width: int | None) -> str:
    """The table's body, fitted to `width` (long cells cut, then columns hidden, said under it)."""
    cells = [[human_cell(row.get(c.key), c.kind) for c in columns] for row in rows]
    body = _body(columns, cells)
    if width is None or _widest(body) <= width:
        return body
    cells = [[_cut(cell) if not c.is_numeric else cell for c, cell in zip(columns, row,
                                                                          strict=True)]
             for row in cells]
    kept = list(range(len(columns)))
    order = sorted(kept[1:], key=lambda n: (-columns[n].drop, -n))
    body = _body(columns, cells)
    while _widest(body) > width and order:
        kept.remove(order.pop(0))
        body = _body([columns[n] for n in kept], [[row[n] for n in kept] for row in cells])
    hidden = [c.header for n, c in enumerate(columns) if n not in kept]
    if hidden:
        line = (f"({len(hidden)} more column{'s' if len(hidden) > 1 else ''}: "
                f"{', '.join(hidden)}; --wide shows every column and whole cells)")
    else:
        line = "(long cells cut; --wide shows them whole)"
    return f"{body}\n{_wrap(line, width, ' ')}"


def _below(column: Column, table: Table, width: int | None) -> str:
    """A long description column as `row: text` lines under the table, named by its first
    column, wrapped to `width` (never cut)."""
    first = table.columns[0]
    lines = [f"{column.header} ({first.header})"]
    for row in table.rows:
        value = row.get(column.key)
        if value in (None, ""):
            continue
        line = f"  {human_cell(row.get(first.key), first.kind)}: {human_cell(value, column.kind)}"
        lines.append(_wrap(line, width, "      "))
    return "\n".join(lines)


def _body(columns: list[Column], cells: list[list[str]]) -> str:
    headers = [column.header for column in columns]
    align = ["right" if column.is_numeric else "left" for column in columns]
    return tabulate(cells, headers, tablefmt="simple", colalign=align, disable_numparse=True)


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def _cut(cell: str) -> str:
    return cell if len(cell) <= TEXT_CELL else cell[:TEXT_CELL - 1] + ELLIPSIS


def _wrap(line: str, width: int | None, indent: str) -> str:
    if width is None or len(line) <= width:
        return line
    return "\n".join(textwrap.wrap(line, width, subsequent_indent=indent,
                                   break_on_hyphens=False)) or line


def _note(note: str, width: int | None) -> str:
    text = "note: " + note.replace("\n", "\n      ")
    if width is None:
        return text
    return "\n".join(_wrap(line, width, "      ") for line in text.splitlines())
