"""A build folder's completeness marker: the size and SHA-256 of every file it holds (no jax).

A cache entry is trusted only when its seal (`COMPLETE.json`, written last, atomically) exists,
names the entry's key and matches every file it lists. A folder without a seal is partial (its
writer died or is still writing); a file that is missing, truncated or altered makes it corrupt.
Either way the caller recompiles.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

SEAL = "COMPLETE.json"
SEAL_SCHEMA = "hloscope/build-seal/v1"
_CHUNK = 1 << 20


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def folder_files(folder: Path) -> list[Path]:
    """Every regular file under `folder` except the seal, relative, sorted."""
    files = [path.relative_to(folder) for path in folder.rglob("*") if path.is_file()]
    return sorted(path for path in files if path != Path(SEAL))


def seal_folder(folder: Path, key: str) -> None:
    """Writes the seal listing every file now in `folder` (atomically: a reader sees all or
    nothing)."""
    files = {str(path): {"bytes": (folder / path).stat().st_size,
                         "sha256": file_digest(folder / path)} for path in folder_files(folder)}
    seal = {"schema": SEAL_SCHEMA, "key": key, "files": files}
    temporary = folder / f".{SEAL}.tmp"
    temporary.write_text(json.dumps(seal, indent=1) + "\n")
    os.replace(temporary, folder / SEAL)


def seal_problem(folder: Path, key: str) -> str | None:
    """None when `folder` is a complete, unaltered entry for `key`; otherwise what is wrong."""
    seal = _read_seal(folder)
    if seal is None:
        return "partial: no readable completeness marker"
    if seal.get("schema") != SEAL_SCHEMA or seal.get("key") != key:
        return "the completeness marker belongs to another entry"
    for name, expected in seal.get("files", {}).items():
        problem = _file_problem(folder / name, expected)
        if problem is not None:
            return f"{name}: {problem}"
    return None


def _read_seal(folder: Path) -> dict[str, Any] | None:
    try:
        seal = json.loads((folder / SEAL).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return seal if isinstance(seal, dict) else None


def _file_problem(path: Path, expected: dict[str, Any]) -> str | None:
    try:
        size = path.stat().st_size
    except OSError:
        return "missing"
    if size != expected.get("bytes"):
        return f"{size} bytes, sealed with {expected.get('bytes')}"
    try:
        digest = file_digest(path)
    except OSError:  # moved away while it was read (another writer's quarantine)
        return "missing"
    return None if digest == expected.get("sha256") else "content differs from its sealed hash"
