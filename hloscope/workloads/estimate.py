"""How long the compiles about to start may take, from the compile times the cache remembers
(no jax).

Every cache entry's manifest records its model, target, variant and the seconds jax spent
lowering and compiling (`compile.lower_seconds`, `compile.compile_seconds`). A planned compile
whose key is already in the cache costs nothing; one that is not is estimated by the median of
earlier compiles of the same model, target and variant, else of the same model and target.
The total is spread over `jobs` compiles at once (the earlier compiles ran under the same kind
of load, so their times already carry it). Without a sample for every planned compile there is
no estimate (None): a guess would mislead more than silence. Worker start-up and jax's import
(a few seconds per compile) are not in the figure, which the start line calls a compile time.
"""
from __future__ import annotations

import json
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hloscope.formats.build import MANIFEST_FILE
from hloscope.units import format_duration
from hloscope.workloads.build import BuildSpec
from hloscope.workloads.cache import BuildCache

MAX_MANIFESTS = 2000  # the newest entries; a cache shared by a team can hold many more


@dataclass(frozen=True)
class CompileEstimate:
    planned: int  # compiles about to be asked for
    cached: int  # of them, already in the cache
    seconds: float | None  # compile time of the others at `jobs` at once; None: no samples
    samples: int  # earlier compiles the estimate is from

    def describe(self) -> str:
        cached = f", {self.cached} already in the cache" if self.cached else ""
        if self.planned == self.cached:
            return "in the cache" if self.planned == 1 else f"all {self.planned} in the cache"
        if self.seconds is None:
            return f"no estimate: no earlier compile of this model and target in the cache{cached}"
        return (f"estimate ~{format_duration(self.seconds)} of XLA compile time, from "
                f"{self.samples} earlier compile{'s' if self.samples != 1 else ''} in the cache "
                f"(worker start-up not included){cached}")


def estimate_compiles(specs: list[BuildSpec], cache_root: Path | None,
                      jobs: int) -> CompileEstimate:
    """The estimate for compiling `specs` (in that order) at `jobs` at once."""
    if cache_root is None:
        return CompileEstimate(len(specs), 0, None, 0)
    cache = BuildCache(cache_root)
    missing = [spec for spec in specs if not cache.entry(spec.cache_key()).exists()]
    cached = len(specs) - len(missing)
    if not missing:
        return CompileEstimate(len(specs), cached, 0.0, 0)
    exact, by_target = _samples(cache_root)
    seconds, used = [], 0
    for spec in missing:
        found = (exact.get((spec.model, spec.target, spec.variant))
                 or by_target.get((spec.model, spec.target)))
        if not found:
            return CompileEstimate(len(specs), cached, None, 0)
        seconds.append(statistics.median(found))
        used = max(used, len(by_target[(spec.model, spec.target)]))
    return CompileEstimate(len(specs), cached, sum(seconds) / min(jobs, len(missing)), used)


def _samples(root: Path) -> tuple[dict[tuple[str, ...], list[float]],
                                  dict[tuple[str, ...], list[float]]]:
    exact: dict[tuple[str, ...], list[float]] = defaultdict(list)
    by_target: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for manifest in _newest_manifests(root / "builds"):
        seconds = _compile_seconds(manifest)
        if seconds is None:
            continue
        model, target = str(manifest.get("model")), str(manifest.get("target"))
        exact[(model, target, str(manifest.get("variant")))].append(seconds)
        by_target[(model, target)].append(seconds)
    return exact, by_target


def _newest_manifests(builds: Path) -> list[dict[str, Any]]:
    try:
        files = [entry / MANIFEST_FILE for entry in builds.iterdir()]
    except OSError:
        return []
    dated = []
    for path in files:
        try:
            dated.append((path.stat().st_mtime, path))
        except OSError:
            continue
    manifests = []
    for _, path in sorted(dated, reverse=True)[:MAX_MANIFESTS]:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            manifests.append(data)
    return manifests


def _compile_seconds(manifest: dict[str, Any]) -> float | None:
    compiled = manifest.get("compile")
    if not isinstance(compiled, dict) or compiled.get("compile_seconds") is None:
        return None
    return float(compiled["compile_seconds"]) + float(compiled.get("lower_seconds") or 0.0)
