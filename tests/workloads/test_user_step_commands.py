"""`build --step` and `oom --step` on the flax example, and the structural variant
`offload_carries` through its `layers.scan`; truths: JAX's own `saved_residuals` of the example's
block (the names' decisions) and XLA's memory_analysis() of the same step compiled by jax
directly (the oom remedies' compiled bytes)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO

pytest.importorskip("flax")
sys.path.insert(0, str(REPO / "examples"))

import flax_step  # noqa: E402
from user_step_programs import residuals  # noqa: E402

STEP = "examples/flax_step.py:make_step"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hloscope", *args], capture_output=True,
                          text=True, timeout=600, cwd=REPO, env=os.environ.copy())


def _names(data: dict) -> dict[str, dict]:
    return {name["name"]: name for name in data["figures"]["checkpoint_names"]}


def _saved_by_jax(name: dict, block_residuals: list[dict]) -> bool:
    """saved_residuals names a kept value `named 'hidden' from FILE:LINE:COL` or, when the
    policy keeps the op that made it, `output of dot_general from FILE:LINE:COL`."""
    return any(f"from {name['source']}:" in r["source"] for r in block_residuals)


@pytest.mark.compile
def test_build_step_lists_checkpoint_names_as_jax_decides(tmp_path):
    done = _cli("build", "--step", STEP, "--target", "cpu", "--policy", "dots_saveable",
                "--no-cache", "-o", str(tmp_path), "--format", "json")
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert data["manifest"]["config"]["step"]["remat"] == "dots_saveable"
    names = _names(data)
    assert set(names) == {"hidden", "activated"}
    oracle = residuals("flax_step", "dots_saveable")
    for name in names.values():
        assert (name["decision"] == "saved") == _saved_by_jax(name, oracle), name
        assert name["decision"] in ("saved", "recomputed")
    hidden = names["hidden"]  # one layer's [batch, seq, hidden] f32
    assert hidden["shape"] == [flax_step.BATCH, flax_step.SEQ, flax_step.HIDDEN]
    assert hidden["bytes"] == 4 * flax_step.BATCH * flax_step.SEQ * flax_step.HIDDEN
    # the scan stacks it: one buffer of the 4 layers' shares
    assert [(b["layers"], b["bytes"]) for b in hidden["at_peak"]] == [
        (flax_step.LAYERS, flax_step.LAYERS * hidden["bytes"])]
    assert names["activated"]["at_peak"] is None  # recomputed: no buffer across the step
    shown = _cli("build", "--step", STEP, "--target", "cpu", "--policy", "dots_saveable",
                 "-o", str(tmp_path / "again"), "--details")  # the names table: a detail
    assert "Checkpoint names" in shown.stdout and "(4 layers)" in shown.stdout


def _xla_allocation(policy: str) -> int:
    """arguments + outputs + temporaries - aliased of the step compiled by jax itself."""
    import jax
    import numpy as np
    from jax.sharding import Mesh

    from hloscope.configs.step import StepConfig
    from hloscope.workloads.step import LayerScan, StepRemat

    mesh = Mesh(np.array(jax.devices("cpu")[:1]), ("data",))
    config = StepConfig("oracle", "", takes_layers=True, remat=policy)
    with jax.set_mesh(mesh):
        fn, args, _ = flax_step.make_step(StepRemat(config, mesh), LayerScan(config))
        stats = jax.jit(fn, donate_argnums=(0,)).lower(*args).compile().memory_analysis()
    return (stats.argument_size_in_bytes + stats.output_size_in_bytes
            + stats.temp_size_in_bytes - stats.alias_size_in_bytes)


@pytest.mark.compile
def test_oom_step_remedies_are_compiled(tmp_path):
    done = _cli("oom", "--step", STEP, "--target", "cpu", "--policy", "none",
                "--candidates", "full,dots_saveable", "--format", "json")
    assert done.returncode in (0, 1), done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert any("compiling the candidates" in note for note in data["notes"])
    remedies = {r["name"]: r for r in data["remedies"]}
    assert set(remedies) == {"remat:full", "remat:dots_saveable"}
    for policy in ("full", "dots_saveable"):
        remedy = remedies[f"remat:{policy}"]
        assert remedy["cost"] == "compiled"
        # the remedy reads the total of XLA's memory-usage report of its compile, which counts
        # a few bytes more than memory_analysis() (measured on full: 1,851,716 vs 1,851,676)
        assert remedy["compiled_bytes"] == pytest.approx(_xla_allocation(policy), abs=64)
    assert data["allocation_bytes"] == pytest.approx(_xla_allocation("none"), abs=64)


@pytest.mark.slow
@pytest.mark.compile
def test_offload_carries_through_layers_scan(tmp_path):
    """offload_carries names each block's input `layer_input` inside layers.scan and offloads
    it: jax's saved_residuals of the block under the hook's checkpoint holds it in host memory
    (`float32<host>`), the trace's decision says offloaded, and the scan stacks it per layer
    (on the CPU, which has no host memory space, in device memory)."""
    import jax
    from jax._src.ad_checkpoint import saved_residuals
    from user_step_programs import _block_and_args

    from hloscope.configs.step import StepConfig
    from hloscope.workloads.remat import checkpointed

    done = _cli("build", "--step", STEP, "--target", "cpu", "--policy", "offload_carries",
                "--no-cache", "-o", str(tmp_path), "--format", "json")
    assert done.returncode == 0, done.stderr[-3000:]
    names = _names(json.loads(done.stdout))
    block, carry, layer = _block_and_args("flax_step")
    hook = checkpointed(block, StepConfig("oracle", "", remat="offload_carries"))
    host = [aval for aval, _ in saved_residuals(hook, carry, layer)
            if "<host>" in str(aval)]
    assert [tuple(a.shape) for a in host] == [tuple(names["layer_input"]["shape"])]
    assert names["layer_input"]["decision"] == "offloaded"
    assert {names[n]["decision"] for n in ("hidden", "activated")} == {"recomputed"}
    stacked = names["layer_input"]["at_peak"]
    assert [b["layers"] for b in stacked] == [flax_step.LAYERS]
    assert jax.tree.leaves(layer)  # the block took one layer's parameters
