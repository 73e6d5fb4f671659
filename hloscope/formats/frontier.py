"""A `hloscope sweep --search frontier -o DIR` folder's frontier.json: each batch's winner and
every candidate the search predicted or compiled.

    frontier.json  hloscope/frontier/v1: the capacity, the names and choices varied, the
                   batches and their winners, the compile and candidate counts, one row per
                   candidate (`sweeps.frontier`: predicted and compiled bytes, the predicted
                   step, fit, chosen, its build folder), the `full` baselines predicted from
                   and, for a user's step, its names as measured

The document is `FrontierResult.to_dict()` (what the frontier report and plot read).
`read_frontier` gives it back typed: the columns other modules use as fields, every column in
`row`. A file written before the schema key existed (`"search": "frontier"`, no "schema") reads
as v1: its keys are the same.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hloscope.errors import ParseError, SourceLocation
from hloscope.formats.json_text import document_text, read_json_document

FRONTIER_SCHEMA = "hloscope/frontier/v1"
FRONTIER_FILE = "frontier.json"
_SEARCH = "frontier"  # the document's "search" key, in every version
_ROW_KEYS: dict[str, tuple[type, ...]] = {  # the typed columns and the JSON types they take
    "batch": (int,), "policy": (str,), "choices": (dict,), "status": (str,), "chosen": (bool,),
    "fits": (bool, type(None)), "predicted_bytes": (int, type(None)),
    "compiled_bytes": (int, type(None)), "prediction_error": (int, float, type(None)),
    "predicted_step_s": (int, float, type(None)),
    "predicted_tokens_per_s": (int, float, type(None)), "build_folder": (str, type(None)),
}


@dataclass(frozen=True)
class FrontierRow:
    """One candidate policy at one batch (`row` holds every column)."""

    batch: int
    policy: str
    status: str  # "predicted" or "compiled"
    chosen: bool
    fits: bool | None
    predicted_bytes: int | None
    compiled_bytes: int | None
    prediction_error: float | None
    predicted_step_s: float | None
    predicted_tokens_per_s: float | None
    build_folder: str | None
    row: dict[str, Any] = field(repr=False)


@dataclass(frozen=True)
class FrontierRecord:
    """A frontier.json read back (`data`: the document as the report and plot take it)."""

    path: Path
    capacity_bytes: int
    names: tuple[str, ...]
    choices: tuple[str, ...]
    batches: tuple[int, ...]
    winners: dict[int, str | None]
    compiles: int
    candidates: int
    rows: list[FrontierRow]
    data: dict[str, Any] = field(repr=False)

    @property
    def folder(self) -> Path:
        return self.path.parent


def frontier_text(data: dict[str, Any]) -> str:
    """The file's text: the schema, then the result's `to_dict()`."""
    return document_text(FRONTIER_SCHEMA, data)


def write_frontier(folder: Path, data: dict[str, Any]) -> Path:
    """Writes frontier.json (a `FrontierResult.to_dict()`) into `folder`; its path."""
    if data.get("search") != _SEARCH:
        raise ValueError("write_frontier takes a FrontierResult's to_dict()")
    path = Path(folder) / FRONTIER_FILE
    path.write_text(frontier_text(data))
    return path


def frontier_file(source: Any) -> Path | None:
    """The frontier.json of a folder (`source` a path), or None when it has none."""
    if not isinstance(source, str | Path) or (isinstance(source, str) and "\n" in source):
        return None
    found = Path(source) / FRONTIER_FILE
    return found if found.is_file() else None


def read_frontier(source: str | Path) -> FrontierRecord:
    """The frontier of a folder or of its frontier.json: InputError (exit 3) when it is missing
    or unreadable, ParseError (exit 4, with line and column) when it is not JSON, not a
    frontier or of another version."""
    path = Path(source)
    path = path / FRONTIER_FILE if path.is_dir() else path
    data = read_json_document(path, "frontier",
                              "`hloscope sweep --search frontier -o DIR` writes one")
    return _record(data, path)


def _record(data: Any, path: Path) -> FrontierRecord:
    if not isinstance(data, dict) or data.get("search") != _SEARCH:
        raise _malformed(path, "no \"search\": \"frontier\"")
    schema = data.get("schema", FRONTIER_SCHEMA)
    if schema != FRONTIER_SCHEMA:
        raise _malformed(path, f"schema {schema!r}; this hloscope reads {FRONTIER_SCHEMA}")
    rows = data.get("rows")
    if not isinstance(rows, list):
        raise _malformed(path, "its rows must be a list")
    winners = data.get("winners")
    if not isinstance(winners, dict) or not all(
            key.isdigit() and (value is None or isinstance(value, str))
            for key, value in winners.items()):
        raise _malformed(path, "its winners must map batches to a policy or null")
    return FrontierRecord(
        path, _integer(data, "capacity_bytes", path), _strings(data, "names", path),
        _strings(data, "choices", path), _integers(data, "batches", path),
        {int(batch): policy for batch, policy in winners.items()},
        _integer(data, "compiles", path), _integer(data, "candidates", path),
        [_row(row, index, path) for index, row in enumerate(rows)], data)


def _row(row: Any, index: int, path: Path) -> FrontierRow:
    if not isinstance(row, dict):
        raise _malformed(path, f"row {index} is not an object")
    for key, types in _ROW_KEYS.items():
        if key not in row:
            raise _malformed(path, f"row {index} has no {key}")
        value = row[key]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise _malformed(path, f"row {index}: {key} is {value!r}")
    return FrontierRow(row["batch"], row["policy"], row["status"], row["chosen"], row["fits"],
                       row["predicted_bytes"], row["compiled_bytes"],
                       _real(row["prediction_error"]), _real(row["predicted_step_s"]),
                       _real(row["predicted_tokens_per_s"]), row["build_folder"], row)


def _real(value: float | None) -> float | None:
    return None if value is None else float(value)


def _integer(data: dict[str, Any], key: str, path: Path) -> int:
    value = data.get(key)
    if type(value) is not int:
        raise _malformed(path, f"{key} must be an integer, not {value!r}")
    return value


def _integers(data: dict[str, Any], key: str, path: Path) -> tuple[int, ...]:
    values = data.get(key)
    if not isinstance(values, list) or not all(type(v) is int for v in values):
        raise _malformed(path, f"{key} must be a list of integers")
    return tuple(values)


def _strings(data: dict[str, Any], key: str, path: Path) -> tuple[str, ...]:
    values = data.get(key)
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise _malformed(path, f"{key} must be a list of strings")
    return tuple(values)


def _malformed(path: Path, why: str) -> ParseError:
    return ParseError(f"not an hloscope frontier ({why}); `hloscope sweep --search frontier "
                      "-o DIR` writes one", SourceLocation(str(path), 1, 1))
