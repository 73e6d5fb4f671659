"""The figures a CI gate keeps (`hloscope snapshot`), and reading them back as a baseline.

A snapshot is small, stable, diff-friendly JSON: the integer headline figures of one module
(bytes, FLOPs and counts per device; derived ratios are left out, `check` recomputes what it
needs) under sorted keys, and the toolchain that compiled the program when something says so.
The versions and XLA options come from the `hloscope build` manifest beside the dump (a build
folder, or the dump folder inside one); the backend from the module itself (dump file name,
TPU tiled layouts). Unknown entries are null: a snapshot never guesses from the environment it
happens to run in, which is not the one that compiled the program.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hloscope.analyses.gate.headline import headline
from hloscope.analyses.summary.overview import ModuleOverview
from hloscope.errors import InputError, ParseError, SourceLocation
from hloscope.model.module import HloModule
from hloscope.parsers.load import BUILD_MANIFEST, BUILD_MANIFEST_SCHEMA

SNAPSHOT_SCHEMA = "hloscope/snapshot/v1"
TOOLCHAIN_KEYS = ("backend", "jax", "jaxlib", "libtpu", "xla_flags")
_VERSION_KEYS = ("jax", "jaxlib", "libtpu")
# options that name paths or dump settings: they differ between identical compiles
_IGNORED_OPTION_PREFIX = "xla_dump"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One module's kept figures (None when unknown, e.g. memory of an unscheduled module)."""

    module: str
    metrics: dict[str, int | None]
    toolchain: dict[str, str | None]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"metrics": dict(sorted(self.metrics.items())), "module": self.module,
                "notes": list(self.notes), "schema": SNAPSHOT_SCHEMA,
                "toolchain": dict(sorted(self.toolchain.items()))}


def take_snapshot(item: ModuleOverview, module: HloModule) -> Snapshot:
    metrics = {m.key: None if m.value is None else int(round(m.value))
               for m in headline(item) if m.kind != "percent"}
    notes = [f"memory {item.memory_note}"] if item.memory_note else []
    return Snapshot(item.inspect.module_name, metrics, toolchain_of(module), notes)


def toolchain_of(module: HloModule) -> dict[str, str | None]:
    """jax/jaxlib/libtpu versions and XLA options from a build manifest; the module's backend."""
    from hloscope.analyses.memory.liveness.spaces import UNKNOWN_BACKEND, detect_backend

    manifest = build_manifest(module.source) or {}
    material = manifest.get("key_material") or {}
    versions = material.get("versions") or {}
    toolchain: dict[str, str | None] = {key: _version(versions.get(key)) for key in _VERSION_KEYS}
    backend = detect_backend(module)
    toolchain["backend"] = None if backend == UNKNOWN_BACKEND else backend
    toolchain["xla_flags"] = _xla_flags(material.get("compiler_options")) if manifest else None
    return toolchain


def _version(value: Any) -> str | None:
    return value if isinstance(value, str) and value != "absent" else None


def _xla_flags(options: Any) -> str | None:
    """A build's compiler options as XLA_FLAGS would spell them, sorted; None when there are
    none the program depends on."""
    if not isinstance(options, dict):
        return None
    flags = [f"--{key}={_flag_value(value)}" for key, value in sorted(options.items())
             if not str(key).startswith(_IGNORED_OPTION_PREFIX)]
    return " ".join(flags) or None


def _flag_value(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def build_manifest(source: str) -> dict[str, Any] | None:
    """The manifest of the `hloscope build` folder `source` (an HLO file) belongs to, if any:
    beside the file (optimized_hlo.txt) or one folder up (dump/module_*.txt)."""
    if not source or source.startswith("<"):
        return None
    folder = Path(source).parent
    for candidate in (folder / BUILD_MANIFEST, folder.parent / BUILD_MANIFEST):
        manifest = _read_json(candidate)
        if isinstance(manifest, dict) and manifest.get("schema") == BUILD_MANIFEST_SCHEMA:
            return manifest
    return None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None


def read_snapshot(path: Path) -> Snapshot:
    """The baseline at `path`: InputError (exit 3) when missing or unreadable, ParseError (exit 4,
    with line and column) when it is not JSON or not a snapshot."""
    if not path.is_file():
        raise InputError(f"{path}: no such baseline file (make one with `hloscope snapshot`)")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot read the baseline: {error}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        line_text = text.splitlines()[error.lineno - 1] if text.strip() else ""
        raise ParseError(f"not a readable baseline (invalid JSON: {error.msg})",
                         SourceLocation(str(path), error.lineno, error.colno), line_text) from None
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
    return Snapshot(str(data.get("module", "")), metrics,
                    {key: toolchain.get(key) for key in TOOLCHAIN_KEYS}, [str(n) for n in notes])


def _not_a_snapshot(path: Path, why: str) -> ParseError:
    return ParseError(f"not an hloscope snapshot ({why}); make one with `hloscope snapshot`",
                      SourceLocation(str(path), 1, 1))
