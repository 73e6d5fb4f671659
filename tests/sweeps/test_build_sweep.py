"""`hloscope build` and `hloscope sweep` end to end, checked against XLA's own figures.

Independent truths: XLA's cost_analysis() (loop-free programs: FLOPs equal; a scanned program's
FLOPs with trip counts applied equal its unrolled twin's), the closed form of what an offloading
program moves to the host and back, libtpu's compile verdict (fit), XLA's GPU rematerialization
pass (which says when it cannot bring a program under its limit), and the fingerprints of
programs JAX documents as identical (plain jax.checkpoint and nothing_saveable). The default
suite runs CPU compiles plus one TPU and one GPU compile here (`compile` marker); the rest are
`slow`.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hloscope.cli.main import cli
from hloscope.formats.build import read_build

ACCELERATOR_SHAPES = ["--seq", "512", "--batch", "64"]  # the TPU/GPU fixtures' shapes


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def build(tmp_path: Path, *args: str, name: str = "build", model: str = "tiny") -> tuple[int, dict]:
    code, output = invoke("build", "--model", model, *args, "-o", str(tmp_path / name),
                          "--format", "json")
    assert code in (0, 1), output
    return code, json.loads(output[output.index("{"):])


def close(ours: float, theirs: float, tolerance: float = 0.01) -> bool:
    return abs(ours - theirs) <= tolerance * abs(theirs)


@pytest.mark.compile
def test_build_writes_the_folder_and_refuses_to_overwrite(tmp_path: Path) -> None:
    code, report = build(tmp_path, "--policy", "full", "--target", "cpu")
    assert code == 0 and report["schema"] == "hloscope/build/v1"
    folder = tmp_path / "build"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "ok" and manifest["variant"] == "full"
    assert manifest["parameters"] == 470_528 and manifest["config"]["remat"] == "full"
    memory = json.loads((folder / "memory_analysis.json").read_text())
    assert memory == manifest["compile"]["memory"] and memory["temp_bytes"] > 0
    assert json.loads((folder / "cost_analysis.json").read_text())["flops"] > 0
    assert "rematted_computation" in (folder / "optimized_hlo.txt").read_text()
    dump = sorted(p.name for p in (folder / "dump").iterdir())
    assert any(name.endswith("cpu_after_optimizations-buffer-assignment.txt") for name in dump)
    code, output = invoke("build", "--model", "tiny", "--target", "cpu", "-o", str(folder))
    assert code == 2 and "--force" in output
    code, _ = invoke("build", "--model", "tiny", "--target", "cpu", "-o", str(folder),
                     "--force")
    assert code == 0 and read_build(folder).manifest["variant"] == "none"


def sweep(tmp_path: Path, name: str, *args: str) -> tuple[int, dict]:
    code, output = invoke("sweep", "--model", "tiny", "--cache-dir", str(tmp_path / "cache"),
                          "-o", str(tmp_path / name), *args)
    document = json.loads((tmp_path / name / "sweep.json").read_text())
    return code, document


@pytest.mark.compile
def test_cpu_sweep_of_every_policy_family_and_its_cache(tmp_path: Path) -> None:
    code, document = sweep(tmp_path, "first", "--target", "cpu", "--policies", "all")
    assert code == 0 and document["schema"] == "hloscope/sweep/v1"
    rows = {row["variant"]: row for row in document["variants"]}
    assert len(rows) == 14 and document["winner"] in rows and document["compiles"] == 14
    for row in rows.values():
        assert row["status"] == "ok", row["error"]
        hlo = Path(row["build_folder"]) / "optimized_hlo.txt"
        assert hlo.exists() and (Path(row["build_folder"]) / "dump").is_dir()
    assert rows["nothing_saveable"]["duplicate_of"] == "full"  # jax: checkpoint saves nothing
    assert rows["none"]["recompute_flops"] == 0 < rows["full"]["recompute_flops"]
    for name in ("none", "full", "dots_saveable", "save_named", "partial:1", "recompute:1",
                 "recompute:2"):  # loop-free
        assert close(rows[name]["total_flops"], rows[name]["xla_flops"]), name
    for scanned in ("full+scan", "nested:1", "offload_carries"):  # = the unrolled program
        assert close(rows[scanned]["total_flops"], rows["full"]["xla_flops"]), scanned
        assert rows[scanned]["xla_flops"] < rows[scanned]["total_flops"]
    code, again = sweep(tmp_path, "second", "--target", "cpu", "--policies", "all")
    assert again["compiles"] == 0 and again["cache_hits"] == 14
    assert [r["fingerprint"] for r in again["variants"]] == [
        r["fingerprint"] for r in document["variants"]]


def offloaded_named_bytes(local_batch: int = 16, seq: int = 512) -> int:
    """offload_named on `tiny` (2 layers, h 128, f 512, bf16) per device and step, each way:
    qkv [b, s, 3h] + attn_out [b, s, h] + mlp_hidden [b, s, f] per layer."""
    return 2 * local_batch * seq * (3 * 128 + 128 + 512) * 2


@pytest.mark.compile
def test_tpu_offload_build_fits_and_moves_what_xla_counts(tmp_path: Path) -> None:
    code, report = build(tmp_path, "--policy", "offload_named", "--target", "tpu:v5e:2x2",
                         *ACCELERATOR_SHAPES)
    figures = report["figures"]
    assert code == 0 and figures["fits"] is True and figures["predicted_fits"] is True
    hlo = figures["hlo"]
    # each named activation (qkv, attn_out, mlp_hidden) of each layer goes once each way
    assert hlo["to_host_bytes"] == hlo["from_host_bytes"] == offloaded_named_bytes()
    assert figures["host_temp_bytes"] > 0
    assert close(hlo["total_flops"], figures["xla_flops"])  # unrolled: no loops
    assert figures["step"]["missing"] == ["host-link bandwidth"]  # v5e's is not published


@pytest.mark.compile
def test_gpu_over_capacity_is_detected_from_the_allocation(tmp_path: Path) -> None:
    code, report = build(tmp_path, "--target", "gpu:h100:1x1x1", "--seq", "4096", "--batch",
                         "256")
    figures = report["figures"]
    assert code == 1 and figures["status"] == "ok" and figures["fits"] is False
    assert figures["required_bytes"] > figures["capacity_bytes"]
    log = (tmp_path / "build" / "compile.log").read_text()
    assert "Can't reduce memory use below" in log  # XLA's own remat pass agrees


@pytest.mark.slow
@pytest.mark.parametrize("batch", ["64", "6144"])  # everything fits / no remat does not
def test_tpu_sweep_predicts_libtpu_and_counts_flops_like_xla(tmp_path: Path, batch: str) -> None:
    code, document = sweep(tmp_path, "tpu", "--target", "tpu:v5e:2x2", "--policies", "all",
                           "--seq", "512", "--batch", batch, "--jobs", "1")
    rows = {row["variant"]: row for row in document["variants"]}
    assert len(rows) == 14 and code == 0
    for name, row in rows.items():
        assert row["status"] in ("ok", "oom"), (name, row["error"])
        assert row["fits"] == (row["status"] == "ok")  # libtpu's verdict
        assert row["predicted_fits"] == row["fits"], (name, row["required_bytes"])
        assert (Path(row["build_folder"]) / "optimized_hlo.txt").exists()
    if batch == "6144":
        assert rows["none"]["fits"] is False and rows["full"]["fits"] is True
    for name in ("full", "dots_with_no_batch_dims_saveable", "save_named", "offload_named",
                 "partial:1"):  # unrolled, no loops: cost_analysis counts everything
        assert close(rows[name]["total_flops"], rows[name]["xla_flops"]), name
    offload = rows["offload_named"]
    # each named activation of each layer goes once each way
    local_batch = int(batch) // 4
    assert offload["to_host_bytes"] == offload["from_host_bytes"] == offloaded_named_bytes(
        local_batch)
    assert document["winner"] == next(r["variant"] for r in document["variants"]
                                      if r["outcome"] == "winner")


@pytest.mark.slow
def test_tpu_scanned_flops_count_every_layer(tmp_path: Path) -> None:
    code, document = sweep(tmp_path, "tpu", "--target", "tpu:v5e:2x2", "--policies",
                           "full,full+scan,nested:1", *ACCELERATOR_SHAPES, "--jobs", "1")
    rows = {row["variant"]: row for row in document["variants"]}
    for scanned in ("full+scan", "nested:1"):  # the unrolled twin's cost_analysis
        assert rows[scanned]["unknown_loops"] == 0, scanned
        assert close(rows[scanned]["total_flops"], rows["full"]["xla_flops"], 0.02), scanned


@pytest.mark.slow
def test_tpu_batch_search_lands_on_the_boundary(tmp_path: Path) -> None:
    code, document = sweep(tmp_path, "search", "--target", "tpu:v5e:2x2", "--policies", "full",
                           "--seq", "512", "--batch", "16384", "--search", "batch", "--jobs",
                           "1")
    row = document["variants"][0]
    largest, failing = row["largest_fitting_batch"], row["smallest_failing_batch"]
    assert code == 0 and failing == largest + 4  # 4 devices on the data axis
    verdicts = {probe["batch"]: probe["status"] for probe in row["probes"]}
    assert verdicts[largest] == "ok" and verdicts[failing] == "oom"  # libtpu's own verdicts
    assert row["batch"] == largest and row["fits"] is True


@pytest.mark.slow
def test_tpu_llama_with_fsdp_and_tensor_parallelism(tmp_path: Path) -> None:
    code, report = build(tmp_path, "--target", "tpu:v5e:2x2", "--policy", "full", "--layers",
                         "2", "--seq", "256", "--batch", "4", "--tensor", "2",
                         name="llama", model="llama-1b")
    figures, manifest = report["figures"], report["manifest"]
    assert code == 0 and figures["fits"] is True
    # parameters, fp32 master and both moments, sharded 4 ways (data x tensor): 14 bytes each
    arguments = manifest["compile"]["memory"]["argument_bytes"]
    assert close(arguments, 14 * manifest["parameters"] / 4, 0.02)


@pytest.mark.slow
def test_gpu_sweep_of_every_policy_family(tmp_path: Path) -> None:
    code, document = sweep(tmp_path, "gpu", "--target", "gpu:h100:1x1x8", "--policies", "all",
                           *ACCELERATOR_SHAPES, "--jobs", "1")
    rows = {row["variant"]: row for row in document["variants"]}
    assert code == 0 and len(rows) == 14
    for name, row in rows.items():
        assert row["status"] == "ok" and row["fits"] is True, (name, row["error"])
        assert row["fit_source"] == "memory vs JAX's GPU budget" and row["xla_flops"] is None
        assert (Path(row["build_folder"]) / "optimized_hlo.txt").exists()
    assert rows["full"]["required_bytes"] < rows["none"]["required_bytes"]
    assert rows["nothing_saveable"]["duplicate_of"] == "full"
