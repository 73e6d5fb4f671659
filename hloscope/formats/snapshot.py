"""A `hloscope snapshot` baseline: the integer figures of one module a CI gate keeps.

    {"schema": "hloscope/snapshot/v1", "metrics": {...}, "module": "...", "notes": [...],
     "toolchain": {"backend": ..., "jax": ..., "jaxlib": ..., "libtpu": ..., "xla_flags": ...}}

Keys are sorted, metrics are integers or null, so the file diffs well. `read_snapshot` is strict:
a missing file is an InputError (exit 3), a file that is not JSON or not a snapshot a ParseError
(exit 4) at its line and column.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hloscope.dataframes import Rendered
from hloscope.errors import ParseError, SourceLocation
from hloscope.formats.json_text import document_text, read_json_document

SNAPSHOT_SCHEMA = "hloscope/snapshot/v1"
TOOLCHAIN_KEYS = ("backend", "jax", "jaxlib", "libtpu", "xla_flags")


@dataclass(frozen=True, slots=True)
class Snapshot(Rendered):
    """One module's kept figures (None when unknown, e.g. memory of an unscheduled module)."""

    module: str
    metrics: dict[str, int | None]
    toolchain: dict[str, str | None]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"metrics": dict(sorted(self.metrics.items())), "module": self.module,
                "notes": list(self.notes), "schema": SNAPSHOT_SCHEMA,
                "toolchain": dict(sorted(self.toolchain.items()))}


def snapshot_text(snapshot: Snapshot) -> str:
    """The baseline file's text (what `hloscope snapshot --format json` prints)."""
    return document_text(SNAPSHOT_SCHEMA, snapshot.to_dict())


def read_snapshot(path: Path) -> Snapshot:
    """The baseline at `path`: InputError (exit 3) when missing or unreadable, ParseError (exit 4,
    with line and column) when it is not JSON or not a snapshot."""
    data = read_json_document(path, "baseline", "make one with `hloscope snapshot`")
    return _snapshot_from(data, path)


def _snapshot_from(data: Any, path: Path) -> Snapshot:
    if not isinstance(data, dict) or data.get("schema") != SNAPSHOT_SCHEMA:
        raise _not_a_snapshot(path, f"schema {SNAPSHOT_SCHEMA} expected")
    metrics, toolchain = data.get("metrics"), data.get("toolchain") or {}
    if not isinstance(metrics, dict) or not all(
            value is None or type(value) is int for value in metrics.values()):
        raise _not_a_snapshot(path, "its metrics must be integers or null")
    if not isinstance(toolchain, dict):
        raise _not_a_snapshot(path, "its toolchain must be an object")
    notes = data.get("notes") or []
    if not isinstance(notes, list):
        raise _not_a_snapshot(path, "its notes must be a list")
    return Snapshot(str(data.get("module", "")), metrics,
                    {key: toolchain.get(key) for key in TOOLCHAIN_KEYS}, [str(n) for n in notes])


def _not_a_snapshot(path: Path, why: str) -> ParseError:
    return ParseError(f"not an hloscope snapshot ({why}); make one with `hloscope snapshot`",
                      SourceLocation(str(path), 1, 1))
