"""CI gates: a snapshot of the figures CI keeps (`hloscope snapshot`) and the check of a program
against one (`hloscope check`).

A snapshot is small, stable JSON: the headline figures (integers where they are counts of bytes,
FLOPs or instructions) and the toolchain that compiled the program when its build manifest says
(jax, jaxlib, libtpu versions, backend, XLA_FLAGS). A check compares a program's figures with
the baseline's against thresholds: relative increases (`--max-peak-increase 2%`), absolute
increases (`--max-remat-increase 0`) and absolute limits (`--max-peak 16GiB`). A toolchain that
differs from the baseline's is reported beside the violations: a compiler upgrade is not a code
regression.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hloscope.analyses.headline import headline
from hloscope.analyses.overview import ModuleOverview
from hloscope.errors import InputError

SNAPSHOT_SCHEMA = "hloscope/snapshot/v1"
TOOLCHAIN_KEYS = ("jax", "jaxlib", "libtpu", "backend", "xla_flags")


@dataclass(frozen=True, slots=True)
class Snapshot:
    module: str
    metrics: dict[str, int | float | None]
    toolchain: dict[str, str | None]

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SNAPSHOT_SCHEMA, "module": self.module, "metrics": self.metrics,
                "toolchain": self.toolchain}


def take_snapshot(item: ModuleOverview, source: str) -> Snapshot:
    metrics = {m.key: m.value for m in headline(item)}
    return Snapshot(item.inspect.module_name, metrics, toolchain_of(source, item))


def toolchain_of(source: str, item: ModuleOverview) -> dict[str, str | None]:
    """Versions from the build manifest beside the dump (a `hloscope build` folder), else None."""
    versions: dict[str, Any] = {}
    manifest = _manifest(Path(source)) if source and source != "-" else None
    if manifest is not None:
        versions = manifest.get("key_material", {}).get("versions", {})
    backend = item.memory.backend if item.memory else None
    toolchain = {key: versions.get(key) for key in ("jax", "jaxlib", "libtpu")}
    return {**toolchain, "backend": backend, "xla_flags": os.environ.get("XLA_FLAGS")}


def _manifest(path: Path) -> dict[str, Any] | None:
    for folder in (path, *path.parents[:3]):
        candidate = folder / "manifest.json"
        if candidate.is_file():
            try:
                return json.loads(candidate.read_text())
            except (OSError, json.JSONDecodeError):
                return None
    return None


def read_snapshot(path: Path) -> Snapshot:
    """The baseline at `path` (InputError, exit 3, when missing or not a snapshot)."""
    if not path.is_file():
        raise InputError(f"{path}: no such baseline file (make one with `hloscope snapshot`)")
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(f"{path}: not a readable baseline: {error}") from None
    if not isinstance(data, dict) or data.get("schema") != SNAPSHOT_SCHEMA \
            or not isinstance(data.get("metrics"), dict):
        raise InputError(f"{path}: not an hloscope snapshot (schema {SNAPSHOT_SCHEMA} expected)")
    return Snapshot(str(data.get("module", "")), data["metrics"], data.get("toolchain") or {})


@dataclass(frozen=True, slots=True)
class Threshold:
    """A limit on one figure: `relative` (0.02 = +2%), `absolute` increase, or `limit`."""

    metric: str
    relative: float | None = None
    absolute: float | None = None
    limit: float | None = None

    def describe(self) -> str:
        if self.relative is not None:
            return f"increase <= {self.relative:.2%}"
        if self.absolute is not None:
            return f"increase <= {self.absolute:g}"
        return f"<= {self.limit:,.0f}"


@dataclass(frozen=True, slots=True)
class Violation:
    metric: str
    baseline: int | float | None
    current: int | float | None
    rule: str

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "baseline": self.baseline, "current": self.current,
                "rule": self.rule}


@dataclass(slots=True)
class CheckResult:
    module: str
    current: Snapshot
    baseline: Snapshot
    thresholds: list[Threshold]
    violations: list[Violation]
    toolchain_changes: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.violations

    def to_dict(self) -> dict[str, Any]:
        return {"module": self.module, "passed": self.passed,
                "violations": [v.to_dict() for v in self.violations],
                "thresholds": [_threshold_dict(t) for t in self.thresholds],
                "toolchain_changes": {k: list(v) for k, v in self.toolchain_changes.items()},
                "current": self.current.to_dict(), "baseline": self.baseline.to_dict()}


def _threshold_dict(threshold: Threshold) -> dict[str, Any]:
    return {"metric": threshold.metric, "relative": threshold.relative,
            "absolute": threshold.absolute, "limit": threshold.limit}


def check(current: Snapshot, baseline: Snapshot, thresholds: list[Threshold]) -> CheckResult:
    violations = [v for t in thresholds if (v := _violation(t, current, baseline)) is not None]
    changes = {key: (baseline.toolchain.get(key), current.toolchain.get(key))
               for key in TOOLCHAIN_KEYS
               if baseline.toolchain.get(key) != current.toolchain.get(key)}
    return CheckResult(current.module, current, baseline, thresholds, violations, changes)


def _violation(threshold: Threshold, current: Snapshot, baseline: Snapshot) -> Violation | None:
    now, before = current.metrics.get(threshold.metric), baseline.metrics.get(threshold.metric)
    rule = threshold.describe()
    if threshold.limit is not None:
        return Violation(threshold.metric, before, now, rule) \
            if now is not None and now > threshold.limit else None
    if now is None or before is None:
        return None
    increase = now - before
    if threshold.absolute is not None and increase > threshold.absolute:
        return Violation(threshold.metric, before, now, rule)
    if threshold.relative is not None and increase > threshold.relative * abs(before):
        return Violation(threshold.metric, before, now, rule)
    return None
