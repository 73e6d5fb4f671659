"""Per-tensor policies compiled: what `names:...` saves, offloads and recomputes, by JAX's own
account (`jax._src.ad_checkpoint.saved_residuals`, a private API used as a test oracle only, run
in a child process), and one live CPU compile of tiny under such a policy. On TPU the offloaded
name is a host buffer (memory space S(5)) of the optimized HLO (slow)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_workloads import needs_jax

import hloscope
from hloscope.cli.main import cli

POLICY = "names:qkv=device,attn_out=offload,mlp_hidden=remat"
EVERY_SAVED_NAMED = "names:qkv=device,attn_out=device,mlp_hidden=device"

ORACLE = """
import dataclasses, json, sys
import jax, jax.numpy as jnp
from jax._src.ad_checkpoint import saved_residuals
from hloscope.configs.policies import parse_variant
from hloscope.configs.presets import preset_config
from hloscope.workloads import layers, remat, transformer

base = dataclasses.replace(preset_config("tiny"), seq_len=16, batch=2)
found = {}
for name in sys.argv[1:]:
    config = parse_variant(name, base).apply(base)
    shapes = transformer.block_shapes(config)
    params = jax.tree.map(lambda s: jnp.full(s, 0.01, jnp.bfloat16), shapes,
                          is_leaf=lambda n: isinstance(n, tuple))
    x = jnp.ones((2, 16, config.d_model), jnp.bfloat16)
    fn = remat.checkpointed(lambda x, p: layers.block(x, p, config), config)
    residuals = saved_residuals(lambda x, p: fn(x, p).astype(jnp.float32).sum(), x, params)
    found[name] = [[text.split(" from ")[0], list(aval.shape),
                    str(getattr(aval, "memory_space", "")).rsplit(".", 1)[-1].lower()]
                   for aval, text in residuals if not text.startswith("from the argument")]
print(json.dumps(found))
"""


def residuals(*policies: str) -> dict[str, list[list]]:
    """policy -> [source, shape, memory kind] of what one tiny block saves (besides its
    arguments), asked of JAX in a child process."""
    done = subprocess.run([sys.executable, "-c", ORACLE, *policies], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def named(saved: list[list], kind: str) -> set[str]:
    return {source.split("'")[1] for source, _, where in saved
            if source.startswith("named") and where == kind}


@needs_jax
def test_device_names_saved_offloaded_on_the_host_remat_ones_recomputed() -> None:
    found = residuals(POLICY, EVERY_SAVED_NAMED, "save_named", "names:*=device")
    saved = found[POLICY]
    assert named(saved, "device") == {"qkv"}
    host = [r for r in saved if r[2] == "host"]  # attn_out [b, s, h], moved by a device_put
    assert [shape for _, shape, _ in host] == [[2, 16, 128]]
    assert all("mlp_hidden" not in source for source, _, _ in saved)
    assert len(saved) == 2  # nothing unnamed is kept: the rest is recomputed
    # save_named is the per-tensor policy with its three names on the device
    assert sorted(found[EVERY_SAVED_NAMED]) == sorted(found["save_named"])
    assert named(found["save_named"], "device") == {"qkv", "attn_out", "mlp_hidden"}
    # every name but mlp_out: the block's output is mlp_out + its residual input, so the
    # backward pass never needs mlp_out itself (the next block saves the sum, its input)
    assert named(found["names:*=device"], "device") == {
        "norm1", "qkv", "attn_out", "out_proj", "norm2", "mlp_in", "mlp_hidden"}


def build(folder: Path, target: str, *extra: str) -> dict:
    result = CliRunner().invoke(cli, [
        "build", "--model", "tiny", "--policy", POLICY, "--target", target, "-o", str(folder),
        "--format", "json", *extra], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output[result.output.index("{"):])


@pytest.mark.compile
def test_tiny_compiles_for_cpu_under_a_per_tensor_policy(tmp_path: Path) -> None:
    data = build(tmp_path / "b", "cpu")
    assert data["manifest"]["variant"] == "names:qkv=device,attn_out=offload"
    assert data["manifest"]["config"]["remat"] == "names:qkv=device,attn_out=offload"
    assert data["figures"]["status"] == "ok"
    # the names the compile recorded, decided as JAX's account above has them: qkv kept on the
    # device, attn_out moved to the host, every other name recomputed
    decisions = {n["name"]: n["decision"] for n in data["figures"]["checkpoint_names"]}
    assert decisions.pop("qkv") == "saved" and decisions.pop("attn_out") == "offloaded"
    assert set(decisions.values()) == {"recomputed"}


@pytest.mark.slow
def test_the_offloaded_name_is_a_host_buffer_on_tpu(tmp_path: Path) -> None:
    # tpu:v5e:2x2, global batch 8 over 4 devices: each layer's attn_out [2, 64, 128] on the host
    build(tmp_path / "tpu", "tpu:v5e:2x2")
    module = hloscope.load(tmp_path / "tpu" / "optimized_hlo.txt")
    host = set()
    for computation in module.computations.values():
        for instruction in computation.instructions:
            host.update(leaf.dimensions for _, leaf in instruction.shape.leaves()
                        if leaf.is_array and leaf.memory_space == 5)
    assert host and all(dims[-3:] == (2, 64, 128) for dims in host)
