"""JSON: the report's `data` (the result's lossless `to_dict()`) with `"schema"` as its first key.

The conversion to JSON values is `hloscope.formats.json_text.to_jsonable`, the one the file
formats use, so a sweep.json or a baseline written to disk is what `--format json` prints.
"""
from __future__ import annotations

from typing import Any

from hloscope.formats.json_text import document_text, to_jsonable
from hloscope.reports.report import Report


def render(report: Report) -> str:
    return document_text(report.schema, report.data)


def document(report: Report) -> dict[str, Any]:
    """The JSON document: schema first, then the data (a `schema` key in data is replaced)."""
    body = {key: value for key, value in report.data.items() if key != "schema"}
    return {"schema": report.schema, **to_jsonable(body)}
