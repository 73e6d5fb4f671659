"""pandas views of analysis results: one tidy DataFrame per table.

A result's tables are the Report tables its command shows, built without truncation (no
`--top`, no "(N more)" rows), so a frame's column sums equal the JSON document's totals. Column
kinds say the dtypes: bytes, FLOPs and counts are integers (nullable `Int64` where a cell can be
empty), text columns whose values repeat, or that name a category, are `category`.

Wiring a result is one entry in `TABLE_FACTORIES` (the result's class name -> a function
returning its tables) and the `DataFrames` mixin on its class. pandas is imported only when a
frame is made: importing hloscope never imports it.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas

    from hloscope.reports.report import Table

INTEGER_KINDS = frozenset({"int", "bytes", "flops"})
CATEGORICAL_KEYS = frozenset({"category", "phase", "opcode", "layer", "outcome", "status",
                              "location", "backend", "fits", "kind", "severity"})

TABLE_FACTORIES: dict[str, str] = {
    "InspectResult": "hloscope.reports.tables:inspect_tables",
    "FlopsResult": "hloscope.reports.tables:flops_tables",
    "RematResult": "hloscope.reports.tables:remat_tables",
    "MemoryResult": "hloscope.reports.tables:memory_tables",
    "OomDiagnosis": "hloscope.reports.tables:oom_tables",
    "CompareResult": "hloscope.reports.tables:compare_tables",
}
"""Result class name -> "module:function" giving its tables (imported when first used)."""


class DataFrames:
    """Adds `to_pandas()` to a result class (slotted dataclasses too: no state of its own)."""

    __slots__ = ()

    def to_pandas(self) -> pandas.DataFrame | dict[str, pandas.DataFrame]:
        """One DataFrame per table: a dict name -> frame, or the frame when there is one."""
        return to_pandas(self)


def to_pandas(result: Any) -> pandas.DataFrame | dict[str, pandas.DataFrame]:
    frames = {table.name: table_frame(table) for table in result_tables(result)}
    if len(frames) == 1:
        return next(iter(frames.values()))
    return frames


def result_tables(result: Any) -> list[Table]:
    """The tables of `result`, by the factory registered for its class (or a base class)."""
    for cls in type(result).__mro__:
        reference = TABLE_FACTORIES.get(cls.__name__)
        if reference is not None:
            return _factory(reference)(result)
    raise TypeError(f"no tables are registered for {type(result).__name__}")


def _factory(reference: str) -> Callable[[Any], list[Table]]:
    module_name, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def table_frame(table: Table) -> pandas.DataFrame:
    """The rows of `table` as a frame: the table's columns first (its keys), then any other key
    the row dicts carry; dtypes from the column kinds."""
    import pandas

    keys = [column.key for column in table.columns]
    keys += [key for row in table.rows for key in row if key not in keys]
    keys = list(dict.fromkeys(keys))
    frame = pandas.DataFrame([[_raw(row.get(key)) for key in keys] for row in table.rows],
                             columns=keys)
    kinds = {column.key: column.kind for column in table.columns}
    for key in keys:
        frame[key] = _typed(frame[key], kinds.get(key), key)
    return frame


def _raw(value: Any) -> Any:
    """A summary-style cell (`Quantity`) as its value: frames hold numbers, not display units."""
    from hloscope.reports.report import Quantity

    return value.value if isinstance(value, Quantity) else value


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
