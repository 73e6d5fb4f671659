"""The figures a CI gate keeps (`hloscope snapshot`); the file is `hloscope.formats.snapshot`.

A snapshot is small, stable, diff-friendly JSON: the integer headline figures of one module
(bytes, FLOPs and counts per device; derived ratios are left out, `check` recomputes what it
needs) under sorted keys, and the toolchain that compiled the program when something says so.
The versions and XLA options come from the `hloscope build` manifest beside the dump (a build
folder, or the dump folder inside one); the backend from the module itself (dump file name,
TPU tiled layouts). Unknown entries are null: a snapshot never guesses from the environment it
happens to run in, which is not the one that compiled the program.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hloscope.analyses.gate.headline import Metric, headline
from hloscope.analyses.summary.overview import ModuleOverview, overview
from hloscope.devices import Device
from hloscope.formats.snapshot import Snapshot
from hloscope.loader.backend import UNKNOWN_BACKEND
from hloscope.loader.program import Program

_VERSION_KEYS = ("jax", "jaxlib", "libtpu")
# options that name paths or dump settings: they differ between identical compiles
_IGNORED_OPTION_PREFIX = "xla_dump"


@dataclass(frozen=True)
class ProgramSnapshot:
    """A program's snapshot and the overview it was taken from (its headline figures give the
    labels and kinds reports show)."""

    snapshot: Snapshot
    overview: ModuleOverview

    def metrics(self, device: Device | None = None) -> list[Metric]:
        return headline(self.overview, device)


def snapshot_program(program: Program, label: str) -> ProgramSnapshot:
    """The snapshot of `program` (what `hloscope snapshot` and `check` take)."""
    item = overview(program, label)
    return ProgramSnapshot(take_snapshot(item, program), item)


def take_snapshot(item: ModuleOverview, program: Program) -> Snapshot:
    metrics = {m.key: None if m.value is None else int(round(m.value))
               for m in headline(item) if m.kind != "percent"}
    notes = [f"memory {item.memory_note}"] if item.memory_note else []
    return Snapshot(item.inspect.module_name, metrics, toolchain_of(program), notes)


def toolchain_of(program: Program) -> dict[str, str | None]:
    """jax/jaxlib/libtpu versions and XLA options from a build manifest; the module's backend."""
    manifest = {} if program.build is None else program.build.manifest
    material = manifest.get("key_material") or {}
    versions = material.get("versions") or {}
    toolchain: dict[str, str | None] = {key: _version(versions.get(key)) for key in _VERSION_KEYS}
    backend = program.backend
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
