"""A `hloscope sweep -o DIR` folder: the ranked variants and each one's build folder.

    sweep.json     hloscope/sweep/v1: the model, target, capacity, grid, the winner and one flat
                   row per variant (`hloscope.sweeps.rows`: fit, memory, FLOPs, step estimate,
                   where its build folder is)
    builds/<case>  each variant's `hloscope build` folder

The document is the sweep report's JSON (`document_text` of the sweep's `to_dict()`), so the file
is what `hloscope sweep --format json` prints. `read_sweep` gives it back typed: the columns
other commands use as fields, every column in `row`.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hloscope.errors import InputError
from hloscope.formats.build import DUMP_FOLDER
from hloscope.formats.json_text import document_text

SWEEP_SCHEMA = "hloscope/sweep/v1"
SWEEP_FILE = "sweep.json"
BUILDS_FOLDER = "builds"


@dataclass(frozen=True)
class SweepRow:
    """One variant of a sweep (`row` holds every column)."""

    variant: str
    status: str | None
    fits: bool | None
    reason: str
    required_bytes: int | None
    total_flops: int | None
    build_folder: str | None
    row: dict[str, Any] = field(repr=False)

    def build_in(self, sweep_folder: Path) -> Path | None:
        """The variant's build folder (its recorded path, else builds/<name> of the sweep
        folder), when it holds a dump; None when the variant compiled nothing."""
        name = re.sub(r"[:+]", "-", self.variant)
        for candidate in (Path(self.build_folder or ""), builds_folder(sweep_folder) / name):
            if candidate.name and (candidate / DUMP_FOLDER).is_dir():
                return candidate
        return None


@dataclass(frozen=True)
class SweepRecord:
    """A sweep.json read back."""

    path: Path
    model: str | None
    target: str | None
    winner: str | None
    capacity_bytes: int | None
    notes: list[str]
    variants: list[SweepRow]
    data: dict[str, Any] = field(repr=False)

    @property
    def folder(self) -> Path:
        return self.path.parent


def builds_folder(sweep_folder: Path) -> Path:
    return sweep_folder / BUILDS_FOLDER


def is_sweep_folder(source: Any) -> bool:
    """Whether `source` (a path, or anything else a command is given) is a sweep folder."""
    if not isinstance(source, str | Path) or (isinstance(source, str) and "\n" in source):
        return False
    return (Path(source) / SWEEP_FILE).is_file()


def sweep_text(data: dict[str, Any]) -> str:
    return document_text(SWEEP_SCHEMA, data)


def write_sweep(folder: Path, data: dict[str, Any]) -> Path:
    """Writes sweep.json (the sweep's `to_dict()`) into `folder`; its path."""
    path = folder / SWEEP_FILE
    path.write_text(sweep_text(data))
    return path


def read_sweep(source: Path) -> SweepRecord:
    """The sweep of a folder or of its sweep.json; InputError (exit 3) when it is unreadable or
    not a sweep."""
    path = source / SWEEP_FILE if source.is_dir() else source
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(f"{path}: not a sweep result ({error})") from None
    rows = data.get("variants") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise InputError(f"{path}: no variants in this sweep result")
    if data.get("schema", SWEEP_SCHEMA) != SWEEP_SCHEMA:
        raise InputError(f"{path}: not a {SWEEP_SCHEMA} result")
    return SweepRecord(path, data.get("model"), data.get("target"), data.get("winner"),
                       data.get("capacity_bytes"), [str(n) for n in data.get("notes") or []],
                       [_row(row) for row in rows], data)


def _row(row: dict[str, Any]) -> SweepRow:
    return SweepRow(str(row.get("variant", "")), row.get("status"), row.get("fits"),
                    str(row.get("reason") or ""), row.get("required_bytes"),
                    row.get("total_flops"), row.get("build_folder"), row)
