"""`hloscope flops` and `hloscope remat` end to end through click: formats, options, exit codes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

import hloscope
from hloscope.analyses.cost import CostOptions
from hloscope.analyses.cost.flops import flops
from hloscope.analyses.cost.remat import remat
from hloscope.cli import flops as flops_cli
from hloscope.cli import remat as remat_cli
from hloscope.cli.main import HloscopeGroup

REMAT_FULL = FIXTURES / "cpu" / "remat-full"
SCANNED = FIXTURES / "cpu" / "scan-remat-none"


def run(*args: str):
    group = HloscopeGroup()
    group.add_command(flops_cli.command)
    group.add_command(remat_cli.command)
    return CliRunner().invoke(group, list(args))


def test_flops_json_has_integer_totals_and_every_breakdown() -> None:
    result = run("flops", str(REMAT_FULL), "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    expected = flops(hloscope.load(REMAT_FULL)).total
    assert data["schema"] == "hloscope/flops/v1"
    assert (data["total_flops"], data["total_transcendentals"], data["total_bytes_accessed"]) \
        == (expected.flops, expected.transcendentals, expected.bytes_accessed)
    assert all(type(data[k]) is int for k in ("total_flops", "total_transcendentals",
                                              "total_bytes_accessed"))
    for by in ("opcode", "scope", "layer", "phase"):
        assert sum(row["flops"] for row in data[f"by_{by}"]) == expected.flops
    assert [row["key"] for row in data["by_phase"]][:3] == ["forward", "backward", "recompute"]


def test_xla_conventions_reproduce_the_like_xla_totals() -> None:
    data = json.loads(run("flops", str(SCANNED), "--xla-conventions", "--format", "json").output)
    expected = flops(hloscope.load(SCANNED), options=CostOptions.like_xla()).total
    assert data["total_flops"] == expected.flops and data["trip_counts_applied"] is False


def test_text_by_layer_names_the_loops_and_per_iteration_figures() -> None:
    """With trip counts the layer loop is unrolled into layer rows; with XLA's conventions (a
    body counted once) it stays one loop row with its per-iteration figures."""
    result = run("flops", str(SCANNED), "--by", "layer")
    assert result.exit_code == 0, result.output
    assert "layer_0" in result.output and "(loop body)" not in result.output
    result = run("flops", str(SCANNED), "--by", "layer", "--xla-conventions")
    assert result.exit_code == 0, result.output
    assert "FLOPs per iteration" in result.output and "(loop body)" in result.output


def test_top_sums_the_rest_into_one_row(tmp_path: Path) -> None:
    out = tmp_path / "ops.csv"
    result = run("flops", str(REMAT_FULL), "--by", "opcode", "--top", "3", "-o", str(out))
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    assert lines[0].startswith("key,flops,share")
    assert len(lines) == 1 + 4 and lines[-1].split(",")[0].endswith("more)")
    assert sum(int(line.split(",")[1]) for line in lines[1:]) == \
        flops(hloscope.load(REMAT_FULL)).total.flops


def test_scope_depth_and_markdown() -> None:
    result = run("flops", str(REMAT_FULL), "--by", "scope", "--depth", "1", "--format",
                 "markdown")
    assert result.exit_code == 0, result.output
    assert "| layer_0 " in result.output and "| layer_1 " in result.output


def test_remat_json_fields() -> None:
    result = run("remat", str(REMAT_FULL), "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    expected = remat(hloscope.load(REMAT_FULL))
    assert data["schema"] == "hloscope/remat/v1"
    for key in ("remat_instructions", "xla_remat_instructions", "recompute_flops",
                "forward_flops"):
        assert type(data[key]) is int and data[key] == getattr(expected, key)
    assert data["recompute_overhead"] == pytest.approx(expected.recompute_overhead)
    assert {row["key"] for row in data["by_layer"]} >= {"layer_0", "layer_1"}


def test_remat_text_by_scope() -> None:
    result = run("remat", str(REMAT_FULL), "--by", "scope")
    assert result.exit_code == 0, result.output
    assert "recompute overhead" in result.output and "layer_0/dot_general" in result.output


@pytest.mark.parametrize("command", ["flops", "remat"])
def test_errors_map_to_exit_codes(tmp_path: Path, command: str) -> None:
    missing = run(command, str(tmp_path / "absent.hlo"))
    assert missing.exit_code == 3 and "Traceback" not in missing.output
    garbled = tmp_path / "bad.hlo"
    garbled.write_text("HloModule m\nENTRY e {\n  p = f32[4 parameter(0)\n}\n")
    malformed = run(command, str(garbled))
    assert malformed.exit_code == 4 and "bad.hlo:3:" in malformed.output
    assert run(command, str(REMAT_FULL), "--depth", "0").exit_code == 2
    misfit = tmp_path / "misfit.hlo"
    misfit.write_text("HloModule m\nENTRY e {\n  p = f32[4,4] parameter(0)\n"
                      "  ROOT c = f32[4,4] convolution(p), dim_labels=bf_io->bf\n}\n")
    refused = run(command, str(misfit))  # XLA's parser refuses it too
    assert refused.exit_code == 4 and "misfit.hlo:4:" in refused.output
    assert "convolution expects 2 operands" in refused.output
    uncostable = run(command, str(misfit), "--lenient")
    assert uncostable.exit_code == 4 and "misfit.hlo:4:" in uncostable.output
    assert "cannot cost this convolution" in uncostable.output
