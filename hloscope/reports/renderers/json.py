"""JSON: the report's `data` (the result's lossless `to_dict()`) with `"schema"` as its first key.

Integers stay integers (bytes, FLOPs); paths, enums, tuples, sets and dataclasses become their JSON
equivalents; non-finite floats (an inf ratio) become null, since JSON has no NaN or Infinity.
"""
from __future__ import annotations

import dataclasses
import enum
import json
import math
from pathlib import PurePath
from typing import Any

from hloscope.reports.report import Report


def render(report: Report) -> str:
    return json.dumps(document(report), indent=2, allow_nan=False) + "\n"


def document(report: Report) -> dict[str, Any]:
    """The JSON document: schema first, then the data (a `schema` key in data is replaced)."""
    body = {key: value for key, value in report.data.items() if key != "schema"}
    return {"schema": report.schema, **to_jsonable(body)}


def to_jsonable(value: Any) -> Any:
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(item) for item in value]
    if isinstance(value, set | frozenset):
        return [to_jsonable(item) for item in sorted(value, key=str)]
    return _convert_object(value)


def _convert_object(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value))
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if isinstance(value, PurePath):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")
