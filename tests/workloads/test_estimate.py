"""The start line's estimate, from hand-written cache manifests: the median compile time of the
same model, target and variant, else of the same model and target, over the jobs at once."""
from __future__ import annotations

import json
from pathlib import Path

from hloscope.configs.policies import parse_variant
from hloscope.configs.presets import preset_config
from hloscope.workloads.build import BuildSpec
from hloscope.workloads.estimate import estimate_compiles


def _spec(variant: str, target: str = "cpu") -> BuildSpec:
    config = preset_config("tiny")
    return BuildSpec("tiny", variant, target, parse_variant(variant, config).apply(config))


def _entry(root: Path, name: str, variant: str, compile_s: float, lower_s: float,
           target: str = "cpu") -> None:
    folder = root / "builds" / name
    folder.mkdir(parents=True)
    manifest = {"model": "tiny", "target": target, "variant": variant,
                "compile": {"compile_seconds": compile_s, "lower_seconds": lower_s}}
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_the_estimate_uses_the_closest_earlier_compiles(tmp_path: Path) -> None:
    _entry(tmp_path, "a", "none", 4.0, 1.0)  # 5 s
    _entry(tmp_path, "b", "full", 10.0, 2.0)  # 12 s
    _entry(tmp_path, "c", "full", 20.0, 2.0)  # 22 s: full's median is 17 s
    _entry(tmp_path, "d", "none", 99.0, 0.0, target="tpu:v5e:2x2")  # another target: unused
    specs = [_spec("none"), _spec("full"), _spec("save_named")]
    estimate = estimate_compiles(specs, tmp_path, jobs=2)
    # none 5 + full 17 + save_named the median of tiny on cpu (5, 12, 22) = 12; two at a time
    assert estimate.seconds == (5 + 17 + 12) / 2
    assert (estimate.planned, estimate.cached, estimate.samples) == (3, 0, 3)
    assert "~17s of XLA compile time, from 3 earlier compiles" in estimate.describe()


def test_a_planned_compile_in_the_cache_costs_nothing(tmp_path: Path) -> None:
    _entry(tmp_path, "a", "none", 4.0, 1.0)
    (tmp_path / "builds" / _spec("full").cache_key()).mkdir(parents=True)
    estimate = estimate_compiles([_spec("none"), _spec("full")], tmp_path, jobs=2)
    assert (estimate.cached, estimate.seconds) == (1, 5.0)
    assert estimate.describe().endswith("1 already in the cache")


def test_no_sample_no_estimate(tmp_path: Path) -> None:
    _entry(tmp_path, "a", "none", 4.0, 1.0, target="tpu:v5e:2x2")
    estimate = estimate_compiles([_spec("none")], tmp_path, jobs=2)
    assert estimate.seconds is None and estimate.describe().startswith("no estimate")
    assert estimate_compiles([_spec("none")], None, jobs=2).seconds is None
