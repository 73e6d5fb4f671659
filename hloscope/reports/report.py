"""The one Report type every command renders.

Analyses return typed results; a small factory per command turns a result into a `Report`;
renderers (see `registry.py`) only format it. A Report carries two views of the same result:

- the human view: `title`, `summary` (headline key/values), `tables` and `notes`, rendered as text,
  Markdown or CSV (the first table). Cells stay raw values; each `Column.kind` says how a human
  format shows them (bytes in binary units, FLOPs in SI units, ...), so CSV keeps raw integers.
- the machine view: `data`, the result's lossless `to_dict()`, which the JSON renderer writes with
  `"schema": "hloscope/<name>/v1"` first. Tables are not in JSON unless the factory puts them in
  `data`: the JSON document is the result, not its presentation.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

if TYPE_CHECKING:
    import pandas

ColumnKind = Literal["text", "int", "bytes", "flops", "flop_rate", "ratio", "percent", "seconds"]
"""How a value is shown to humans. "percent" values are fractions (0.25 is shown as 25.0%);
"ratio" values are plain factors (1.25 is shown as 1.25x); "seconds" values are seconds (0.00026
is shown as 260 µs)."""

COLUMN_KINDS: frozenset[str] = frozenset(get_args(ColumnKind))
_REPORT_NAME = re.compile(r"[a-z][a-z0-9-]*")


def schema_id(report_name: str) -> str:
    """The JSON schema string of a report: `hloscope/<name>/v1`."""
    return f"hloscope/{report_name}/v1"


@dataclass(frozen=True, slots=True)
class Column:
    """One table column: `key` in the row dicts (and the CSV header), `header` for humans.
    `drop` orders the columns a narrow terminal hides (higher first, then from the right; 0
    for the rest): long descriptions before figures. In default text output (no `--details`)
    a `detail` column is left out and a `below` one (a long description) is printed under the
    table, one line per row, instead of as a column; every other format shows both."""

    key: str
    header: str
    kind: ColumnKind = "text"
    drop: int = 0
    detail: bool = False
    below: bool = False

    def __post_init__(self) -> None:
        if self.kind not in COLUMN_KINDS:
            raise ValueError(f"column {self.key!r}: unknown kind {self.kind!r}")

    @property
    def is_numeric(self) -> bool:
        return self.kind != "text"


@dataclass(slots=True)
class Table:
    """A titled table; rows map column keys to raw values (a missing key is an empty cell). A
    `detail` table (per-name tables, buffers at the peak: long or wide) is shown in text only with
    `--details`; the JSON document, Markdown and HTML always hold it."""

    name: str
    title: str
    columns: list[Column]
    rows: list[dict[str, Any]] = field(default_factory=list)
    detail: bool = False

    def to_frame(self) -> pandas.DataFrame:
        """All rows as a pandas DataFrame, dtypes from the column kinds (see dataframes.py); a
        summary-style cell (`Quantity`) is its value: frames hold numbers, not display units."""
        from hloscope.reports.frames import rows_frame

        rows = [{key: value.value if isinstance(value, Quantity) else value
                 for key, value in row.items()} for row in self.rows]
        return rows_frame([(column.key, column.kind) for column in self.columns], rows)


@dataclass(frozen=True, slots=True)
class Quantity:
    """A summary value with a kind, e.g. `Quantity(peak, "bytes")` shows as "1.50 GiB"."""

    value: int | float | None
    kind: ColumnKind

    def __post_init__(self) -> None:
        if self.kind not in COLUMN_KINDS:
            raise ValueError(f"unknown quantity kind {self.kind!r}")


SummaryValue = str | int | float | bool | Quantity | None


@dataclass(slots=True)
class Report:
    """What a command shows: a human view (summary, tables, notes) and a JSON document (`data`).
    `detail_notes` explain what only `--details` shows in text (every other format has them)."""

    name: str
    title: str
    summary: list[tuple[str, SummaryValue]] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    detail_notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not _REPORT_NAME.fullmatch(self.name):
            raise ValueError(f"report name {self.name!r} must match {_REPORT_NAME.pattern}")

    @property
    def schema(self) -> str:
        return schema_id(self.name)

    @property
    def every_note(self) -> list[str]:
        """The notes and the detail notes: what formats without a default view show."""
        return [*self.notes, *self.detail_notes]

    @property
    def primary_table(self) -> Table | None:
        """The first table: the one CSV output holds."""
        return self.tables[0] if self.tables else None

    def table(self, name: str) -> Table:
        for table in self.tables:
            if table.name == name:
                return table
        raise KeyError(f"report {self.name!r} has no table {name!r}")
