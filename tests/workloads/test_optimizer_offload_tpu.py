"""`--optimizer-offload` compiled deviceless for a TPU v5e 2x2: the fp32 master weights and
AdamW moments are arguments and outputs in pinned host memory (`S(5)`), and what moves is what a
closed form says.

Closed form (tiny, 2 layers, FSDP over 4 devices): the optimizer state one device holds is
12 B (fp32 master, mu, nu) per parameter it holds. FSDP splits every weight matrix 4 ways and
keeps vectors (norm scales, biases) whole on each device (`workloads/sharding.py`), so a device
holds matrices/4 + vectors parameters; the textbook 12 B x N / 4 is within 1% of that here.
Each leaf goes to the device once for the update and back once. One compile (~15 s) in the
default suite.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import hloscope
from hloscope.cli.main import cli
from hloscope.configs.config import block_param_count_of, norm_param_count, param_count
from hloscope.configs.presets import preset_config
from hloscope.workloads.build import BuildSpec

SEQ, BATCH, DEVICES, LAYERS = 512, 64, 4, 2
OPTIMIZER_BYTES = 12  # fp32 master + two fp32 moments per parameter


def held_parameters() -> tuple[int, int]:
    """(parameters one device holds, all parameters) of the tiny model under FSDP."""
    config = preset_config("tiny", n_layers=LAYERS, seq_len=SEQ, fsdp=True)
    h, f = config.d_model, config.d_ff
    block_vectors = 2 * norm_param_count(config) + 3 * h + h + f + h  # norms, biases
    assert block_param_count_of(config) - block_vectors == 12 * h * h  # the matrices
    vectors = LAYERS * block_vectors + norm_param_count(config)
    total = param_count(config)
    return (total - vectors) // DEVICES + vectors, total


@pytest.mark.compile
def test_optimizer_state_lives_in_pinned_host_memory(tmp_path: Path) -> None:
    folder = tmp_path / "offload"
    result = CliRunner().invoke(cli, [
        "build", "--model", "tiny", "--layers", str(LAYERS), "--fsdp", "--optimizer-offload",
        "--target", "tpu:v5e:2x2", "--seq", str(SEQ), "--batch", str(BATCH), "-o", str(folder),
        "--format", "json", "--no-cache"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output[result.output.index("{"):])["figures"]
    held, total = held_parameters()
    state = OPTIMIZER_BYTES * held
    memory = json.loads((folder / "memory_analysis.json").read_text())
    # XLA's host arguments: the state, tile-padded (vectors of 128 fp32 pad a little)
    assert state <= memory["host_argument_bytes"] <= state * 1.01
    assert memory["host_output_bytes"] == memory["host_alias_bytes"] == \
        memory["host_argument_bytes"]  # donated: the new state overwrites the old in place
    assert abs(memory["host_argument_bytes"] / (OPTIMIZER_BYTES * total / DEVICES) - 1) < 0.03
    hlo = figures["hlo"]
    assert hlo["to_host_bytes"] == hlo["from_host_bytes"] == state  # each leaf in and out once
    assert figures["host_fit"]["bytes_per_device"] == memory["host_argument_bytes"]
    assert figures["host_fit"]["fits"] is True
    module = hloscope.load(folder / "optimized_hlo.txt")
    on_host = [p for p in module.entry.parameters
               if any(leaf.memory_space == 5 for _, leaf in p.shape.leaves() if leaf.is_array)]
    leaves = len(module.entry.parameters) - 1 - 2  # less the step counter and the batch
    assert len(on_host) == 3 * leaves // 4  # master, mu, nu of each of the params' leaves
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["config"]["optimizer_offload"] is True
    assert manifest["key_material"]["config"]["optimizer_offload"] is True


def test_optimizer_offload_enters_the_cache_key_only_when_on() -> None:
    base = preset_config("tiny", fsdp=True)
    on = preset_config("tiny", fsdp=True, optimizer_offload=True)
    assert "optimizer_offload" not in base.to_dict()  # older configs hash as before
    keys = {BuildSpec("tiny", "none", "tpu:v5e:2x2", config).cache_key() for config in (base, on)}
    assert len(keys) == 2
