"""How one cell or summary value is shown, by its column kind (see `report.ColumnKind`).

`human_cell` is for text and Markdown (units, thousands separators, percentages); `raw_cell` is
for CSV (the value itself, so bytes and FLOPs stay integers). Values that do not fit their kind
(a string in a bytes column, e.g. "n/a") are shown as they are.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from hloscope.reports.report import ColumnKind, Quantity
from hloscope.units import format_bytes, format_flops, format_seconds


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):  # one number format: every count grouped, as "int" cells are
        return f"{value:,}"
    return str(value)


def _integer(value: int | float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:,.2f}"


def _ratio(value: int | float) -> str:
    return f"{value:.2f}x"


def _percent(value: int | float) -> str:
    return f"{value * 100:.1f}%"


_HUMAN: dict[str, Callable[[Any], str]] = {
    "text": _text,
    "int": _integer,
    "bytes": format_bytes,
    "flops": format_flops,
    "flop_rate": lambda value: f"{format_flops(value)}/s",
    "ratio": _ratio,
    "percent": _percent,
    "seconds": format_seconds,
}


def human_cell(value: Any, kind: ColumnKind = "text") -> str:
    """`human_cell(1536, "bytes")` -> "1.50 KiB"; None -> ""."""
    if isinstance(value, Quantity):
        return human_cell(value.value, value.kind)
    if value is None:
        return ""
    if kind != "text" and not _is_finite_number(value):
        return _text(value)
    return _HUMAN[kind](value)


NOT_AVAILABLE = "n/a"


def summary_cell(value: Any) -> str:
    """A summary value as `human_cell` shows it, "n/a" where that is blank: a headline field is
    never left empty (factories give the reason, "n/a (why)", where they know it)."""
    return human_cell(value) or NOT_AVAILABLE


def not_available(reason: str) -> str:
    """`n/a (reason)`: how a report says a figure it cannot give."""
    return f"{NOT_AVAILABLE} ({reason})"


def _is_finite_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return isinstance(value, int) or math.isfinite(value)


def raw_cell(value: Any) -> Any:
    """The value CSV writes: the raw value (None becomes an empty cell)."""
    if isinstance(value, Quantity):
        return raw_cell(value.value)
    return "" if value is None else value
