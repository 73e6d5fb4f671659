"""A `hloscope profile` folder: one train step measured under `jax.profiler.trace`.

    profile.json   hloscope/profile-manifest/v1: what ran (model, variant, config, steps), the
                   outcome, host-measured step seconds and losses, the backend, versions, and
                   where the files are
    trace/         what jax.profiler.trace wrote (plugins/profile/<run>/<host>.xplane.pb, ...)
    dump/          XLA's dump folder of the train step
    profile.log    the child process's output

`find_dump_folder` finds the dump that belongs to a trace inside such a folder, so `hloscope
trace FOLDER` joins against XLA's own text.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hloscope.errors import InputError

PROFILE_SCHEMA = "hloscope/profile-manifest/v1"
PROFILE_FILE = "profile.json"
TRACE_FOLDER = "trace"
DUMP_FOLDER = "dump"
LOG_FILE = "profile.log"
_PROFILE_DEPTH = 5  # <profile>/trace/plugins/profile/<run>/<host>.xplane.pb


@dataclass(frozen=True)
class ProfileManifest:
    """profile.json read back (`data` holds every key)."""

    folder: Path
    model: str | None
    variant: str | None
    steps: int | None
    data: dict[str, Any] = field(repr=False)


def profile_files() -> dict[str, str]:
    """The manifest's "files" entry."""
    return {"trace": TRACE_FOLDER, "dump": DUMP_FOLDER, "log": LOG_FILE}


def write_profile_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    """Writes profile.json, `schema` first."""
    data = {"schema": PROFILE_SCHEMA, **manifest}
    (folder / PROFILE_FILE).write_text(json.dumps(data, indent=2) + "\n")


def read_profile_manifest(folder: Path) -> ProfileManifest:
    """The manifest of a profile folder; InputError (exit 3) when unreadable or not one."""
    path = folder / PROFILE_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(f"{folder}: not a profile folder ({error})") from None
    if not isinstance(data, dict) or data.get("schema") != PROFILE_SCHEMA:
        raise InputError(f"{path}: not a {PROFILE_SCHEMA} manifest")
    return ProfileManifest(folder, data.get("model"), data.get("variant"), data.get("steps"), data)


def find_profile_folder(source: str | Path) -> Path | None:
    """The `hloscope profile` folder `source` is in (profile.json beside trace/), or None."""
    return _enclosing(source, lambda folder: (folder / PROFILE_FILE).is_file())


def find_dump_folder(source: str | Path) -> Path | None:
    """The XLA dump folder of the profile folder `source` is in (`dump/` beside `trace/`)."""
    folder = _enclosing(source, lambda folder: (folder / DUMP_FOLDER).is_dir())
    return None if folder is None else folder / DUMP_FOLDER


def _enclosing(source: str | Path, holds: Callable[[Path], bool]) -> Path | None:
    """`source` or the nearest folder above it that has trace/ and `holds`."""
    path = Path(source)
    for folder in (path, *path.parents[:_PROFILE_DEPTH]):
        if (folder / TRACE_FOLDER).is_dir() and holds(folder):
            return folder
    return None
