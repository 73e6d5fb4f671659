"""Per-device shapes of the built-in block's checkpoint names (issue 19, gap 2): the trace knows
each name's global shape; one device holds the batch's share (and, under tensor parallelism, the
column-parallel widths' share). Truth: the closed form of `hloscope policies` (spec.tensors:
sequences per device x seq x device width, in the compute dtype) against the shapes the jax
trace of the block gives (tracing only); and, on TPU (slow), the optimized HLO's per-layer
stacked buffers that hold the saved names."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jax
import pytest
from click.testing import CliRunner

from hloscope.cli.main import cli
from hloscope.configs.presets import preset_config
from hloscope.configs.tensors import block_tensors, device_shape, tensor_bytes
from hloscope.workloads import layers, transformer
from hloscope.workloads.checkpoint_names import Variant, named_values


def _traced(config) -> dict[str, tuple[tuple[int, ...], int]]:
    """name -> (global shape, bytes) of one block of `config`, traced by jax."""
    params = jax.tree.map(lambda s: jax.ShapeDtypeStruct(s, config.compute_dtype),
                          transformer.block_shapes(config),
                          is_leaf=lambda n: isinstance(n, tuple))
    x = jax.ShapeDtypeStruct((config.batch // config.micro_batches, config.seq_len,
                              config.d_model), config.compute_dtype)
    jaxpr = jax.jit(lambda x, p: layers.block(x, p, config)).trace(x, params).jaxpr
    return {n.name: (n.shape, n.bytes) for n in named_values(jaxpr, Variant(False))}


@pytest.mark.parametrize(("model", "batch", "micro", "batch_ways", "tensor_ways"), [
    ("llama-1b", 8, 1, 4, 1),  # tpu:v5e:2x2, global batch 8: [2, 2048, width] per device
    ("llama-1b", 8, 2, 2, 2),  # data 2 x tensor 2, two micro-batches
    ("tiny", 8, 1, 4, 1),
])
def test_device_shapes_are_the_closed_form(model, batch, micro, batch_ways, tensor_ways):
    config = dataclasses.replace(preset_config(model), batch=batch, micro_batches=micro)
    traced = _traced(config)
    tensors = block_tensors(config)
    assert set(traced) == {t.name for t in tensors}
    local = batch // micro // batch_ways
    for tensor in tensors:
        shape, total = traced[tensor.name]
        assert shape[0] == batch // micro  # the trace is global
        ours = device_shape(tensor.name, shape, config, batch_ways, tensor_ways)
        width = tensor.device_width(tensor_ways)
        assert ours is not None and ours[:2] == (local, config.seq_len), tensor.name
        element = total // (shape[0] * config.seq_len * tensor.width)
        assert element * local * config.seq_len * width == tensor_bytes(
            tensor, config, batch_ways, tensor_ways)
        assert ours[0] * ours[1] * (ours[2] if len(ours) == 3 else ours[2] * ours[3]) == (
            local * config.seq_len * width), tensor.name


def test_names_not_of_the_block_have_no_per_device_shape():
    config = preset_config("tiny")
    assert device_shape("hidden", (8, config.seq_len, 64), config, 4, 1) is None


@pytest.mark.compile
def test_a_build_on_four_devices_shows_per_device_shapes(tmp_path: Path):
    """tiny on cpu:4 at global batch 8 (the batch over 4 devices): qkv traced [8, s, 3h],
    [2, s, 3h] and its closed-form bytes per device; the traced shape stays in the JSON."""
    result = CliRunner().invoke(cli, [
        "build", "--model", "tiny", "--policy", "names:qkv=device", "--target", "cpu:4",
        "--batch", "8", "-o", str(tmp_path / "b"), "--format", "json", "--no-cache"],
        catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output[result.output.index("{"):])
    config = dataclasses.replace(preset_config("tiny"), batch=8)
    names = {n["name"]: n for n in data["figures"]["checkpoint_names"]}
    for tensor in block_tensors(config):
        row = names[tensor.name]
        assert row["shape"] == [8, config.seq_len, tensor.width]
        assert row["device_shape"] == [2, config.seq_len, tensor.width]
        assert row["device_bytes"] == tensor_bytes(tensor, config, 4, 1)
        assert row["bytes"] == 4 * row["device_bytes"]
