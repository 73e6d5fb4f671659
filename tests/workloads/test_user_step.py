"""A user's own train step (flax.nnx, equinox) swept through the API and `--step`, checked
against XLA's own cost analysis and closed forms (issue 18, deliverable 1).

Truths: XLA's `cost_analysis()` of each compiled variant (recorded by the compile itself), of
the same model compiled with the layers unrolled (a Python loop: no while loop for hloscope's
trip counts to multiply), and the closed form of the block's recomputed forward work under full
remat. The examples' block is x + relu(x W1) W2 on N = batch x seq tokens: its backward pass
reads relu's input (the mask) and output (for dW2) but not the second matmul's output, so full
remat recomputes x W1 (2 N d f FLOPs), relu (N f, one max per element) and relu's derivative
mask (N f, one compare per element) per layer.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

import hloscope

pytest.importorskip("flax")
pytest.importorskip("equinox")
sys.path.insert(0, str(REPO / "examples"))

import equinox_step  # noqa: E402
import flax_step  # noqa: E402

POLICIES = ["none", "full", "dots_saveable", "dots_with_no_batch_dims_saveable"]
FLAX_POLICIES = ["none", "full", "dots_saveable", "nested:2"]


def _tokens(example) -> int:
    return example.BATCH * example.SEQ


def _unrolled_xla_flops(example) -> float:
    """XLA's cost_analysis() of the example's step with its layers in a Python loop."""
    import jax
    import numpy as np
    from jax.sharding import Mesh

    from hloscope.configs.step import StepConfig
    from hloscope.workloads.step import StepRemat

    mesh = Mesh(np.array(jax.devices("cpu")[:1]), ("data",))
    remat = StepRemat(StepConfig("oracle", ""), mesh)
    fn, args, _ = example.make_step(remat, unrolled=True)
    with jax.set_mesh(mesh):
        return jax.jit(fn).lower(*args).compile().cost_analysis()["flops"]


def _check_sweep(result_dict: dict, folder: Path, example, policies: list[str]) -> None:
    rows = {row["variant"]: row for row in result_dict["variants"]}
    assert list(rows) == policies
    assert all(row["status"] == "ok" for row in rows.values())
    assert result_dict["winner"] in policies
    for name in policies:
        build = folder / "builds" / name.replace(":", "-")
        module = hloscope.load(build / "optimized_hlo.txt")
        xla = json.loads((build / "cost_analysis.json").read_text())["flops"]
        ours = hloscope.flops(module, xla_conventions=True).total.flops
        # measured: 4-5 FLOPs apart of ~2.6e7 (the loop counters' scalar adds and compares)
        assert ours == pytest.approx(xla, rel=1e-6), name
    none = hloscope.load(folder / "builds" / "none" / "optimized_hlo.txt")
    unrolled = _unrolled_xla_flops(example)
    assert hloscope.flops(none).total.flops == pytest.approx(unrolled, rel=0.01)
    full = hloscope.remat(hloscope.load(folder / "builds" / "full" / "optimized_hlo.txt"))
    n, d, f = _tokens(example), example.WIDTH, example.HIDDEN
    closed_form = example.LAYERS * (2 * n * d * f + 2 * n * f)
    assert full.recompute_flops == closed_form


@pytest.mark.compile
def test_flax_step_through_the_api(tmp_path: Path) -> None:
    result = hloscope.sweep(flax_step.make_step, policies=FLAX_POLICIES, target="cpu",
                            output=tmp_path)
    data = result.to_dict()
    assert data["config"]["step"]["takes_layers"] is True
    frames = result.to_pandas()  # one table: the variants
    assert list(frames["variant"]) == FLAX_POLICIES
    _check_sweep(data, tmp_path, flax_step, FLAX_POLICIES)
    assert json.loads((tmp_path / "sweep.json").read_text())["winner"] == result.winner


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hloscope", *args], capture_output=True,
                          text=True, timeout=900, cwd=REPO, env=os.environ.copy())


@pytest.mark.compile
def test_equinox_step_through_the_cli(tmp_path: Path) -> None:
    done = _cli("sweep", "--step", "examples/equinox_step.py:make_step", "--target", "cpu",
                "--policies", ",".join(POLICIES), "--no-cache", "-o", str(tmp_path),
                "--format", "json")
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert data["config"]["step"]["takes_layers"] is False
    _check_sweep(data, tmp_path, equinox_step, POLICIES)


def test_structural_policy_refused_without_the_layers_hook(tmp_path: Path) -> None:
    done = _cli("sweep", "--step", "examples/equinox_step.py:make_step", "--target", "cpu",
                "--policies", "none,nested:2", "--no-cache", "-o", str(tmp_path))
    assert done.returncode == 2, done.stderr
    assert "def make_step(remat, layers)" in done.stderr
    assert not any(tmp_path.iterdir())  # refused before compiling anything


def test_step_refuses_built_in_model_options(tmp_path: Path) -> None:
    done = _cli("sweep", "--step", "examples/equinox_step.py:make_step", "--target", "cpu",
                "--layers", "4", "-o", str(tmp_path))
    assert done.returncode == 2 and "--layers describes the built-in model" in done.stderr


@pytest.mark.slow
@pytest.mark.compile
def test_flax_step_through_the_cli_and_equinox_through_the_api(tmp_path: Path) -> None:
    done = _cli("sweep", "--step", "examples/flax_step.py:make_step", "--target", "cpu",
                "--policies", ",".join(FLAX_POLICIES), "--no-cache", "-o",
                str(tmp_path / "flax"), "--format", "json")
    assert done.returncode == 0, done.stderr[-3000:]
    _check_sweep(json.loads(done.stdout), tmp_path / "flax", flax_step, FLAX_POLICIES)
    result = hloscope.sweep(equinox_step.make_step, policies=POLICIES, target="cpu",
                            output=tmp_path / "eqx")
    _check_sweep(result.to_dict(), tmp_path / "eqx", equinox_step, POLICIES)


@pytest.mark.slow
@pytest.mark.compile
@pytest.mark.parametrize("example", ["flax_step", "equinox_step"])
def test_step_sweeps_for_tpu(tmp_path: Path, example: str) -> None:
    """tpu:v5e:2x2: the batch sharded over 4 chips; the FLOPs checks are per device (the
    unrolled oracle is compiled for one CPU device with the whole batch: / 4)."""
    policies = FLAX_POLICIES if example == "flax_step" else POLICIES
    done = _cli("sweep", "--step", f"examples/{example}.py:make_step", "--target",
                "tpu:v5e:2x2", "--policies", ",".join(policies), "--no-cache", "-o",
                str(tmp_path), "--format", "json", "--jobs", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert all(row["status"] == "ok" and row["fits"] for row in data["variants"])
    for name in policies:
        build = tmp_path / "builds" / name.replace(":", "-")
        module = hloscope.load(build / "optimized_hlo.txt")
        xla = json.loads((build / "cost_analysis.json").read_text())["flops"]
        assert hloscope.flops(module, xla_conventions=True).total.flops == pytest.approx(
            xla, rel=1e-6), name
