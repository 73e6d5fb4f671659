"""The Python API: results' DataFrames against the JSON documents and against XLA's own figures."""
from __future__ import annotations

import json
import subprocess
import sys

import pandas
import pytest
from click.testing import CliRunner
from conftest import FIXTURES

import hloscope
from hloscope.cli.main import cli
from hloscope.errors import UsageError

CPU_NONE = FIXTURES / "cpu" / "remat-none"
CPU_FULL = FIXTURES / "cpu" / "remat-full"
TPU_FULL = FIXTURES / "tpu-v5e-2x2" / "remat-full"


def cli_json(*args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def meta(folder) -> dict:
    return json.loads((folder / "meta.json").read_text())


def test_import_loads_neither_jax_nor_pandas() -> None:
    code = ("import sys, hloscope; hloscope.load; "
            "print(sorted(m for m in ('jax', 'pandas', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("folder", [CPU_FULL, TPU_FULL], ids=["cpu", "tpu"])
def test_flops_frames_add_up_to_the_json_totals(folder) -> None:
    frames = hloscope.flops(hloscope.load(folder)).to_pandas()
    document = cli_json("flops", str(folder))
    assert set(frames) == {"by_opcode", "by_scope", "by_layer", "by_phase"}
    for name, frame in frames.items():
        assert frame["flops"].dtype == "int64"
        assert int(frame["flops"].sum()) == document["total_flops"], name
        assert int(frame["bytes_accessed"].sum()) == document["total_bytes_accessed"], name
        assert int(frame["transcendentals"].sum()) == document["total_transcendentals"], name


def test_flops_by_one_breakdown_is_one_frame_matching_xla() -> None:
    frame = hloscope.flops(hloscope.load(CPU_NONE), by="opcode",
                           xla_conventions=True).to_pandas()
    assert isinstance(frame, pandas.DataFrame)
    xla = meta(CPU_NONE)["cost"]  # XLA's cost_analysis() of this loop-free program
    assert int(frame["flops"].sum()) == pytest.approx(xla["flops"], rel=1e-7)
    assert int(frame["transcendentals"].sum()) == xla["transcendentals"]
    with pytest.raises(UsageError, match="breakdown"):
        hloscope.flops(hloscope.load(CPU_NONE), by="colour")


def test_memory_frames_add_up_to_the_json_document() -> None:
    result = hloscope.memory(hloscope.load(CPU_FULL))
    frames = result.to_pandas()
    document = cli_json("memory", str(CPU_FULL))
    live = frames["live_at_peak"]
    assert int(live["bytes"].sum()) == document["peak_bytes"]
    assert len(live) == len(document["live_at_peak"])
    assert live["category"].dtype == "category" and live["phase"].dtype == "category"
    assert live["bytes"].dtype == "int64"
    for by in ("category", "phase", "scope", "layer"):
        assert int(frames[f"by_{by}"]["bytes"].sum()) == document["peak_bytes"], by
    assert int(frames["timeline"]["live_bytes"].max()) == max(
        step["live_bytes"] for step in document["timeline"])
    # XLA's buffer assignment, read from the dump: the allocation is beside the live peak
    assert document["allocation_bytes"] == result.to_dict()["allocation_bytes"]


def test_inspect_frames_match_xla_memory_analysis() -> None:
    frames = hloscope.inspect(hloscope.load(CPU_NONE)).to_pandas()
    xla = meta(CPU_NONE)["memory"]  # XLA's memory_analysis() of the compiled program
    assert int(frames["parameters"]["bytes"].sum()) == xla["argument_bytes"]
    ops = frames["op_counts"]
    assert ops["opcode"].dtype == "category"
    assert int(ops["count"].sum()) == hloscope.load(CPU_NONE).instruction_count


def test_remat_frames_add_up_to_recompute_flops() -> None:
    result = hloscope.remat(hloscope.load(CPU_FULL))
    frames = result.to_pandas()
    document = cli_json("remat", str(CPU_FULL))
    assert document["recompute_flops"] > 0
    for name in ("by_layer", "by_scope"):
        assert int(frames[name]["flops"].sum()) == document["recompute_flops"]


def test_oom_of_the_libtpu_oom_fixture_does_not_fit() -> None:
    """libtpu refused this program (RESOURCE_EXHAUSTED, in its manifest): on a v5e it must not
    fit, and the diagnosis's frames hold its remedies or groups."""
    folder = FIXTURES / "tpu-v5e-2x2-oom"
    assert json.loads((folder / "manifest.json").read_text())["status"] == "oom"
    diagnosis = hloscope.oom(hloscope.load(folder), device="v5e")
    assert diagnosis.fits is False
    assert diagnosis.to_dict()["fits"] is False
    frames = diagnosis.to_pandas()
    assert frames  # at least one table
    with pytest.raises(UsageError):
        hloscope.oom(hloscope.load(folder), device="v5e", capacity="1GiB")
