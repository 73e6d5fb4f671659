"""`offload_carries` compiled deviceless for a TPU v5e 2x2: the layer scan's per-layer carries
live in pinned host memory (`S(5)`), and what moves is what a closed form says.

Closed form (tiny: h = 128, bf16; seq 512, global batch 64 over 4 devices, b = 16 per device):
the scan keeps one [b, s, h] block input per layer, L x 16 x 512 x 128 x 2 B; XLA allocates that
on the host (memory_analysis' host temporaries) and each carry goes once to the host in the
forward pass and once back in the backward pass. One compile in the default suite (~30 s); the
comparison with `full` (two compiles) is slow.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import hloscope
from hloscope.cli.main import cli
from hloscope.model.shape import Shape

SEQ, BATCH, DEVICES, WIDTH = 512, 64, 4, 128
LOCAL_BATCH = BATCH // DEVICES


def carries_bytes(layers: int) -> int:
    return layers * LOCAL_BATCH * SEQ * WIDTH * 2


def build(folder: Path, policy: str, layers: int) -> dict:
    result = CliRunner().invoke(cli, [
        "build", "--model", "tiny", "--layers", str(layers), "--policy", policy, "--target",
        "tpu:v5e:2x2", "--seq", str(SEQ), "--batch", str(BATCH), "-o", str(folder),
        "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output[result.output.index("{"):])["figures"]


def host_buffers(folder: Path) -> set[tuple[int, ...]]:
    """Dimensions of every array the optimized module places in host memory (space 5)."""
    module = hloscope.load(folder / "optimized_hlo.txt")
    found = set()
    for computation in module.computations.values():
        for instruction in computation.instructions:
            leaves: list[Shape] = [leaf for _, leaf in instruction.shape.leaves()]
            found.update(leaf.dimensions for leaf in leaves
                         if leaf.is_array and leaf.memory_space == 5)
    return found


@pytest.mark.compile
def test_offload_carries_puts_the_per_layer_carries_in_host_memory(tmp_path: Path) -> None:
    figures = build(tmp_path / "offload", "offload_carries", layers=2)
    assert figures["status"] == "ok" and figures["fits"] is True
    assert host_buffers(tmp_path / "offload") == {(2, LOCAL_BATCH, SEQ, WIDTH)}  # [L, b, s, h]
    assert figures["host_temp_bytes"] == carries_bytes(2)  # XLA's host allocation
    host = figures["host_fit"]  # 8 devices x the carries, against the v5e VM's 384 GB
    assert (host["bytes_per_device"], host["bytes_per_host"], host["fits"]) == (
        carries_bytes(2), 8 * carries_bytes(2), True)
    hlo = figures["hlo"]
    assert hlo["to_host_bytes"] == hlo["from_host_bytes"] == carries_bytes(2)  # each carry once
    assert hlo["unknown_loops"] == 0


@pytest.mark.slow
def test_offloading_the_carries_frees_device_memory_that_full_remat_keeps(tmp_path: Path) -> None:
    # 8 layers: with 2 the carries (4 MiB) are smaller than the transfer buffers offload adds
    offload = build(tmp_path / "offload", "offload_carries", layers=8)
    full = build(tmp_path / "full", "full+scan", layers=8)
    memory = {name: json.loads((tmp_path / name / "memory_analysis.json").read_text())
              for name in ("offload", "full")}
    assert memory["full"]["host_temp_bytes"] == 0
    assert memory["offload"]["host_temp_bytes"] == carries_bytes(8)
    assert memory["offload"]["temp_bytes"] < memory["full"]["temp_bytes"]
    assert offload["hlo"]["to_host_bytes"] == offload["hlo"]["from_host_bytes"] == \
        carries_bytes(8)
    assert full["hlo"]["to_host_bytes"] == 0
