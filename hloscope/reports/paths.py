"""Source locations as reports show them: relative, not the absolute paths of the machine that
compiled the program.

XLA records `source_file` as the compiling machine's absolute path (`/work/main/hloscope/...`),
which says nothing on another machine and makes tables wide. A report shows each one, in order
of preference: relative to the current directory when it lies under it; from the package
directory on for files under `site-packages/` or `dist-packages/` (`jax/_src/...`); else
relative to the parent of the directory all the table's other absolute paths share (so
`/work/main/hloscope/workloads/layers.py` beside `.../transformer.py` shows as
`workloads/layers.py`). JSON keeps the paths as the HLO has them.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import PurePosixPath

_PACKAGE_ROOTS = ("site-packages", "dist-packages")


def relative_sources(locations: Iterable[str], cwd: str | None = None) -> dict[str, str]:
    """Each "file:line" (or "file") location mapped to how a report shows it."""
    here = PurePosixPath(cwd or os.getcwd())
    shown: dict[str, str] = {}
    rest: list[str] = []
    for location in set(locations):
        path, _ = _split(location)
        if not path.startswith("/"):
            shown[location] = location
            continue
        short = _under(PurePosixPath(path), here)
        if short is None:
            rest.append(location)
        else:
            shown[location] = _join(short, location)
    base = _common_parent([PurePosixPath(_split(loc)[0]) for loc in rest])
    for location in rest:
        full = PurePosixPath(_split(location)[0])
        shown[location] = _join(str(full.relative_to(base)), location)
    return shown


def _under(path: PurePosixPath, here: PurePosixPath) -> str | None:
    if path.is_relative_to(here) and path != here:
        return str(path.relative_to(here))
    parts = path.parts
    for index in range(len(parts) - 1, -1, -1):
        if parts[index] in _PACKAGE_ROOTS and index + 1 < len(parts):
            return str(PurePosixPath(*parts[index + 1:]))
    return None


def _common_parent(paths: list[PurePosixPath]) -> PurePosixPath:
    """The parent of the deepest directory every path lies in ("/" for none)."""
    if not paths:
        return PurePosixPath("/")
    common = os.path.commonpath([str(p.parent) for p in paths])
    return PurePosixPath(common).parent


def _split(location: str) -> tuple[str, str]:
    path, colon, line = location.rpartition(":")
    return (path, line) if colon and line.isdigit() else (location, "")


def _join(short: str, location: str) -> str:
    _, line = _split(location)
    return f"{short}:{line}" if line else short


def with_relative_sources(rows: list[dict], key: str = "source") -> list[dict]:
    """`rows` with the `key` field of each shown as `relative_sources` shows it (copies)."""
    shown = relative_sources(str(row.get(key) or "") for row in rows)
    return [{**row, key: shown[str(row.get(key) or "")]} if row.get(key) else row
            for row in rows]
