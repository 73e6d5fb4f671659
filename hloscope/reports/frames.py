"""Rows of a report table as a tidy pandas DataFrame: what `Table.to_frame()` builds.

A result's tables (`reports/tables.py`) are the Report tables its command shows, built without
truncation (no `--top`, no "(N more)" rows), so a frame's column sums equal the JSON document's
totals. Column kinds say the dtypes: bytes, FLOPs and counts are integers (nullable `Int64`
where a cell can be empty), text columns whose values repeat, or that name a category, are
`category`. pandas is imported here, when a frame is made. This module takes plain keys, kinds
and rows, so that `report.py` can call it without the two importing each other.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas

INTEGER_KINDS = frozenset({"int", "bytes", "flops"})
CATEGORICAL_KEYS = frozenset({"category", "phase", "opcode", "layer", "outcome", "status",
                              "location", "backend", "fits", "kind", "severity"})


def rows_frame(columns: Sequence[tuple[str, str]], rows: Sequence[dict[str, Any]]
               ) -> pandas.DataFrame:
    """`rows` as a frame: the `columns` (key, kind) first, then any other key the rows carry;
    dtypes from the column kinds. Cells are raw values (numbers, not display units)."""
    import pandas

    keys = [key for key, _ in columns]
    keys += [key for row in rows for key in row if key not in keys]
    keys = list(dict.fromkeys(keys))
    frame = pandas.DataFrame([[row.get(key) for key in keys] for row in rows], columns=keys)
    kinds = dict(columns)
    for key in keys:
        frame[key] = _typed(frame[key], kinds.get(key), key)
    return frame


def _typed(series: pandas.Series, kind: str | None, key: str) -> pandas.Series:
    values = [v for v in series if v is not None]
    integers = bool(values) and all(_is_int(v) for v in values)
    if integers and (kind in INTEGER_KINDS or kind is None):
        return series.astype("Int64" if len(values) < len(series) else "int64")
    if all(isinstance(v, str) for v in values) and values and _is_categorical(values, key):
        return series.astype("category")
    return series


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_categorical(values: list[str], key: str) -> bool:
    return key in CATEGORICAL_KEYS or len(set(values)) < len(values)
