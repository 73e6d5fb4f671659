"""`hloscope policies --model`: the block's named tensors against the config's closed form."""
from __future__ import annotations

import json

from click.testing import CliRunner

from hloscope.cli.main import cli


def listed(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["policies", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_tiny_lists_every_name_with_its_closed_form_bytes() -> None:
    # tiny: b = 8, s = 64, h = 128, f = 512, bf16 (2 B); fused qkv is [b, s, 3h]
    b, s, h, f = 8, 64, 128, 512
    widths = {"norm1": h, "qkv": 3 * h, "attn_out": h, "out_proj": h, "norm2": h,
              "mlp_in": f, "mlp_hidden": f, "mlp_out": h}
    data = listed("--model", "tiny")
    rows = {row["name"]: row for row in data["tensors"]}
    assert list(rows) == list(widths)
    for name, width in widths.items():
        assert rows[name]["shape"] == [b, s, width]
        assert rows[name]["bytes_per_layer"] == b * s * width * 2
    assert data["bytes_per_layer"] == b * s * sum(widths.values()) * 2
    assert (rows["attn_out"]["maxtext"], rows["mlp_out"]["maxtext"]) == ("context", "mlpwo")
    assert data["aliases"]["save_named"] == "names:qkv=device,attn_out=device,mlp_hidden=device"


def test_per_device_under_the_mesh() -> None:
    # 4 CPU devices, 2-way tensor parallelism: batch 8 over 2 data ways, column-parallel widths
    # halved; micro-batches 2 halve the sequences again
    data = listed("--model", "tiny", "--tensor", "2", "--micro-batches", "2", "--target",
                  "cpu:4")
    rows = {row["name"]: row for row in data["tensors"]}
    assert (data["batch_ways"], data["tensor_ways"]) == (2, 2)
    assert rows["qkv"]["shape"] == [2, 64, 192] and rows["out_proj"]["shape"] == [2, 64, 128]


def test_grouped_query_names_and_exit_codes() -> None:
    data = listed("--model", "llama-1b", "--layers", "2")
    kv = 8 * 64  # 8 K/V heads of 64
    rows = {row["name"]: row for row in data["tensors"]}
    assert rows["key_proj"]["shape"] == [16, 2048, kv]
    assert {"mlp_gate", "mlp_up"} <= set(rows) and "qkv" not in rows
    bad = CliRunner().invoke(cli, ["build", "--model", "tiny", "--policy", "names:qkv=gpu",
                                   "--target", "cpu", "-o", "unused"])
    assert bad.exit_code == 2 and "device, offload, remat" in bad.output
