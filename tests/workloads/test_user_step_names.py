"""Per-tensor `names:` policies on a user's step (issue 19, item 1), on examples/flax_step.py,
whose block names `hidden` (x W1) and `activated` (relu of it).

Truths: JAX's own `saved_residuals` (what `print_saved_residuals` prints; private, an oracle
only) of the example's block under `jax.checkpoint` with a policy built from
`jax.checkpoint_policies` directly; XLA's memory_analysis() of the example's step compiled by
jax itself with that policy (through the example's own scan: no hloscope hook); the example's
source text (where it names the tensors, its shapes); and, on TPU, the optimized HLO's memory
space S(5) (pinned host) for the offloaded name.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

pytest.importorskip("flax")
sys.path.insert(0, str(REPO / "examples"))

import flax_step  # noqa: E402
from user_step_programs import _block_and_args  # noqa: E402

import hloscope  # noqa: E402
from hloscope.formats.checkpoint_names import read_names  # noqa: E402

STEP = "examples/flax_step.py:make_step"
EXAMPLE = REPO / "examples" / "flax_step.py"
SHAPE = (flax_step.BATCH, flax_step.SEQ, flax_step.HIDDEN)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hloscope", *args], capture_output=True,
                          text=True, timeout=600, cwd=REPO, env=os.environ.copy())


def _named_at(name: str) -> str:
    """FILE:LINE of the example's checkpoint_name(..., "NAME") call, read from its source."""
    lines = EXAMPLE.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if f'"{name}")' in text)
    return f"{EXAMPLE}:{line}"


def _jax_policy(device: tuple[str, ...], offload: tuple[str, ...]):
    import jax

    return jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=list(device), names_which_can_be_offloaded=list(offload),
        offload_src="device", offload_dst="pinned_host")


def _jax_residuals(device: tuple[str, ...], offload: tuple[str, ...] = ()) -> list[tuple]:
    """(what, shape, memory kind) of each value the block saves under jax's own policy, its
    arguments aside, as saved_residuals says: `named 'hidden'` for a saved name, `output of
    device_put` for one moved to the host."""
    import jax
    from jax._src.ad_checkpoint import saved_residuals

    block, carry, layer = _block_and_args("flax_step")
    checkpointed = jax.checkpoint(block, policy=_jax_policy(device, offload))
    return sorted((text.split(" from")[0], tuple(aval.shape),
                   str(getattr(aval, "memory_space", "")).rsplit(".", 1)[-1].lower())
                  for aval, text in saved_residuals(checkpointed, carry, layer)
                  if not text.startswith("from the argument"))


class _JaxRemat:
    """The example's `remat` hook played by jax alone: jax.checkpoint with a given policy."""

    def __init__(self, policy) -> None:
        import jax
        import numpy as np
        from jax.sharding import Mesh

        self.policy, self.batch, self.seq_len = policy, None, None
        self.mesh = Mesh(np.array(jax.devices("cpu")[:1]), ("data",))

    def __call__(self, block):
        import jax

        return jax.checkpoint(block, policy=self.policy)


def _xla_allocation(device: tuple[str, ...], offload: tuple[str, ...] = ()) -> int:
    """arguments + outputs + temporaries - aliased of the example's step compiled by jax with
    its own scan (`make_step(remat)`, no layers hook) under jax's own policy."""
    import jax

    remat = _JaxRemat(_jax_policy(device, offload))
    with jax.set_mesh(remat.mesh):
        fn, args, _ = flax_step.make_step(remat)
        stats = jax.jit(fn, donate_argnums=(0,)).lower(*args).compile().memory_analysis()
    return (stats.argument_size_in_bytes + stats.output_size_in_bytes
            + stats.temp_size_in_bytes - stats.alias_size_in_bytes)


def _decisions(data: dict) -> dict[str, str]:
    return {name["name"]: name["decision"] for name in data["figures"]["checkpoint_names"]}


def test_policies_step_lists_the_names_traced() -> None:
    done = _cli("policies", "--step", STEP, "--format", "json")
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert data["names"] == ["hidden", "activated"]
    element = 4 * flax_step.BATCH * flax_step.SEQ * flax_step.HIDDEN  # float32 [b, s, f]
    for row in data["tensors"]:
        assert row["shape"] == [flax_step.BATCH, flax_step.SEQ, flax_step.HIDDEN]
        assert (row["dtype"], row["bytes"]) == ("float32", element)
        assert row["source"] == _named_at(row["name"])


def test_an_unknown_name_is_refused_with_the_steps_names(tmp_path: Path) -> None:
    done = _cli("sweep", "--step", STEP, "--target", "cpu", "--policies",
                "full,names:hidden=device,mlp_hidden=offload", "--no-cache", "-o",
                str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr[-3000:]
    assert "unknown checkpoint name 'mlp_hidden'" in done.stderr
    assert "names: hidden, activated" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_oom_step_refuses_an_unknown_name_among_its_candidates() -> None:
    done = _cli("oom", "--step", STEP, "--target", "cpu", "--policy", "names:Hidden=device",
                "--candidates", "full,names:hidden=device,activated=offload")
    assert done.returncode == 2, done.stderr[-3000:]
    # the names keep their case through oom's candidate list: `Hidden` is not `hidden`
    assert "unknown checkpoint name 'Hidden'" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.compile
def test_hidden_on_the_device_is_saved_and_activated_recomputed(tmp_path: Path) -> None:
    # jax saves hidden (one layer's [b, s, f]) on the device and recomputes activated
    assert _jax_residuals(("hidden",)) == [("named 'hidden'", SHAPE, "device")]
    done = _cli("build", "--step", STEP, "--target", "cpu", "--policy", "names:hidden=device",
                "--no-cache", "-o", str(tmp_path), "--format", "json")
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert data["manifest"]["variant"] == "names:hidden=device"
    assert _decisions(data) == {"hidden": "saved", "activated": "recomputed"}
    # the compile is the program jax compiles with its own policy: the same allocation (the
    # memory-usage report counts a few bytes more than memory_analysis(), as for other policies)
    assert data["figures"]["required_bytes"] == pytest.approx(_xla_allocation(("hidden",)),
                                                              abs=64)


@pytest.mark.compile
def test_every_name_through_the_api(tmp_path: Path) -> None:
    """`*` stands for the step's names; on the CPU (no host memory space in jax 0.10.2's CPU
    compiles) an offloaded name is decided `offloaded` as jax's saved_residuals has it."""
    assert _jax_residuals((), ("hidden",)) == [("output of device_put", SHAPE, "host")]
    assert _jax_residuals(("hidden", "activated")) == [("named 'activated'", SHAPE, "device"),
                                                       ("named 'hidden'", SHAPE, "device")]
    result = hloscope.sweep(flax_step.make_step, policies=["names:*=device",
                                                           "names:*=remat,hidden=offload"],
                            target="cpu", output=tmp_path)
    rows = {row["variant"]: row for row in result.to_dict()["variants"]}
    assert list(rows) == ["names:*=device", "names:hidden=offload"]
    assert all(row["status"] == "ok" for row in rows.values())
    offloaded = read_names(next((tmp_path / "builds").glob("names-hidden*offload*")))
    assert {n.name: n.decision for n in offloaded} == {"hidden": "offloaded",
                                                       "activated": "recomputed"}
    assert rows["names:*=device"]["required_bytes"] == pytest.approx(
        _xla_allocation(("hidden", "activated")), abs=64)
    every = read_names(next((tmp_path / "builds").glob("names-*device")))
    assert {n.name: n.decision for n in every} == {"hidden": "saved", "activated": "saved"}


@pytest.mark.slow
@pytest.mark.compile
def test_the_offloaded_name_is_a_host_buffer_on_tpu(tmp_path: Path) -> None:
    """tpu:v5e:2x2, the example's batch 4 over 4 chips: each layer's hidden [1, 32, 256] f32
    lives in pinned host memory (S(5)), and nothing of activated's shape does."""
    done = _cli("build", "--step", STEP, "--target", "tpu:v5e:2x2", "--policy",
                "names:hidden=offload", "--no-cache", "-o", str(tmp_path), "--format", "json")
    assert done.returncode == 0, done.stderr[-3000:]
    assert _decisions(json.loads(done.stdout)) == {"hidden": "offloaded",
                                                   "activated": "recomputed"}
    module = hloscope.load(tmp_path / "optimized_hlo.txt")
    host = set()
    for computation in module.computations.values():
        for instruction in computation.instructions:
            host.update(leaf.dimensions for _, leaf in instruction.shape.leaves()
                        if leaf.is_array and leaf.memory_space == 5)
    per_device = (flax_step.BATCH // 4, flax_step.SEQ, flax_step.HIDDEN)
    assert host and all(dims[-3:] == per_device for dims in host), host
