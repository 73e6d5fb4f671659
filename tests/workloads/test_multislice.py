"""Multislice, live: a deviceless probe of libtpu's multislice topologies and slice tables, and
one 2-slice compile of the tiny preset whose collectives are checked against the mesh.

Independent truths: libtpu's own deviceless topologies (device counts, `slice_index`), the mesh
the build states (devices sorted by (slice_index, id), reshaped to DCN data x ICI FSDP: each
FSDP group is one slice's devices, each data group one device of every slice), the optimized
HLO's text read with regular expressions here (not hloscope's parser), and a closed form for the
data-parallel gradient reduction: it carries at least the FSDP-sharded bf16 gradient (2 bytes x
parameters / FSDP ways) and at most the whole one (2 bytes x parameters).

Measured (libtpu 0.0.42.1): libtpu compiles one program per slice. Its optimized HLO has
`num_partitions` = the devices of one slice, its replica groups name those devices, and what
crosses slices is a `send` / `recv` pair for the megascale runtime (`_xla_megascale_transfer_type
="ALL_REDUCE"`). Every accelerator type of the v5e, v6e, v4, v5p, v2 and v3 tables gives
libtpu's own device count (chips x devices per chip) in ~1.5 s for all 80; v5e:1x1 and v6e:1x1
need `chips_per_host_bounds=[1,1,1]` (the default host is larger than one chip).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from hloscope.cli.main import cli
from hloscope.configs.targets import parse_target

PROBE = """
import json, sys
from jax.experimental import topologies
from hloscope.configs.slices import accelerator_types
from hloscope.devices import get_device
found = {}
multi = topologies.get_topology_desc("v6e:8x16", "tpu", num_slices=4).devices
found["multislice"] = sorted([d.slice_index for d in multi])
for device in ("v5e", "v6e", "v4", "v5p"):
    options = {}
    if get_device(device).chip_config_name:
        options["chip_config_name"] = get_device(device).chip_config_name
    for accelerator in accelerator_types(device):
        extra = {"chips_per_host_bounds": [1, 1, 1]} if accelerator.chips == 1 else {}
        described = topologies.get_topology_desc(f"{device}:{accelerator.topology}", "tpu",
                                                 **options, **extra)
        found[accelerator.name] = len(described.devices)
json.dump(found, sys.stdout)
"""


def run_probe() -> dict:
    from hloscope.workloads.runner import child_environment

    env = child_environment(parse_target("tpu:v5e:2x2"))  # libtpu quiet, jax on the CPU
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.compile
def test_libtpu_agrees_with_the_tables_and_builds_four_slices() -> None:
    found = run_probe()
    assert found.pop("multislice") == [s for s in range(4) for _ in range(128)]
    assert parse_target("tpu:v6e:8x16", num_slices=4).num_devices == 512
    for name, devices in found.items():
        assert parse_target(f"tpu:{name}").num_devices == devices, name


def _hlo_bytes(shape: str) -> int:
    """Bytes of `bf16[16,8,128]`-style text (the dtypes this program uses)."""
    dtype, dims = re.match(r"(\w+)\[([\d,]*)\]", shape).groups()
    size = {"bf16": 2, "f32": 4, "s32": 4, "u32": 4, "pred": 1}[dtype]
    for dim in filter(None, dims.split(",")):
        size *= int(dim)
    return size


def _megascale_transfers(hlo: str) -> dict[str, tuple[str, int]]:
    """rendezvous -> (transfer type, the larger of send and recv buffer bytes)."""
    found: dict[str, tuple[str, int]] = {}
    pattern = re.compile(r"= \((\w+\[[\d,]*\])[^\n]*? (send|recv)\([^\n]*?"
                         r'_xla_host_transfer_rendezvous="([^"]+)"[^\n]*?'
                         r'_xla_megascale_transfer_type="([A-Z_]+)"')
    for shape, _, name, kind in pattern.findall(hlo):
        previous = found.get(name, (kind, 0))[1]
        found[name] = (kind, max(previous, _hlo_bytes(shape)))
    return found


@pytest.mark.compile
def test_two_slices_reduce_gradients_over_dcn_and_gather_weights_over_ici(
        tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, [
        "build", "--model", "tiny", "--target", "tpu:v5e:2x2", "--num-slices", "2", "--fsdp",
        "-o", str(tmp_path / "b"), "--format", "json", "--no-cache"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output[result.output.index("{"):])
    manifest = report["manifest"]
    assert manifest["target"] == "tpu:v5e:2x2:slices=2" and manifest["devices"] == 8
    assert manifest["target_description"] == "2 x 4 TPU v5e chips = 8 devices"
    assignment = manifest["compile"]["device_assignment"]
    slices = [entry["slice_index"] for entry in assignment]
    assert slices == [0, 0, 0, 0, 1, 1, 1, 1]  # the mesh's order: (slice_index, id)
    assert len({entry["id"] for entry in assignment}) == 8
    mesh = manifest["mesh"]
    assert (mesh["dcn_data_parallelism"], mesh["ici_fsdp_parallelism"]) == (2, 4)

    hlo = (tmp_path / "b" / "optimized_hlo.txt").read_text()
    # the FSDP axis is one slice's 4 devices: the per-slice program has 4 partitions and every
    # parameter all-gather runs over all of them, i.e. inside the slice
    assert re.search(r"num_partitions=(\d+)", hlo).group(1) == "4"
    gathers = re.findall(r" all-gather\([^\n]*?replica_groups=(\{[{}\d,]*\}|\[[^ ]*?)[, ]", hlo)
    assert gathers and set(gathers) == {"{{0,1,2,3}}"}
    # the data-parallel gradient reduction: one device of each slice, over DCN
    transfers = _megascale_transfers(hlo)
    reduced = sum(size for kind, size in transfers.values() if kind == "ALL_REDUCE")
    parameters = manifest["parameters"]
    assert 2 * parameters // 4 <= reduced <= 2 * parameters
    figures = report["figures"]["hlo"]
    assert figures["dcn_collective_bytes"] == sum(size for _, size in transfers.values())
    assert figures["ici_collective_bytes"] > 0
    assert Counter(kind for kind, _ in transfers.values())["ALL_REDUCE"] >= 1
