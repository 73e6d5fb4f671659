"""`hloscope memory` end to end through click: formats, groupings, the plot, exit codes."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from hloscope.cli.main import cli
from hloscope.parsers.xla_memory import find_memory_artifacts

REMAT_NONE = FIXTURES / "cpu" / "remat-none"
SCANNED = FIXTURES / "cpu" / "scan-remat-none"
TPU = FIXTURES / "tpu-v5e-2x2" / "remat-none"


def run(*args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, ["memory", *args], input=stdin)


def xla_peak(folder: Path) -> int:
    return find_memory_artifacts(folder).read_live_range().peak_bytes


def test_json_has_the_peak_its_buffers_and_categories() -> None:
    result = run(str(REMAT_NONE), "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["schema"] == "hloscope/memory/v1"
    assert type(data["peak_bytes"]) is int and data["peak_bytes"] == xla_peak(REMAT_NONE)
    assert data["peak_instruction"] == "add_convert_fusion.7"
    rows = data["live_at_peak"]
    assert sum(row["bytes"] for row in rows) == data["peak_bytes"]
    assert {"bytes", "shape", "instruction", "op_name", "category"} <= set(rows[0])
    assert sum(data["by_category"].values()) == data["peak_bytes"]
    assert [s["memory_space"] for s in data["spaces"]] == [0]


def test_from_a_dump_folder_xlas_figures_stand_beside_ours() -> None:
    data = json.loads(run(str(REMAT_NONE), "--format", "json").output)
    analysis = json.loads((REMAT_NONE / "meta.json").read_text())["memory"]
    assert data["allocation_bytes"] == analysis["allocated_bytes"]
    assert data["xla_peak_bytes"] == xla_peak(REMAT_NONE)
    text = run(str(REMAT_NONE)).output
    assert "XLA allocation (buffer assignment)" in text and "live peak - XLA allocation" in text


def test_hlo_text_alone_gives_no_allocation() -> None:
    text = next(REMAT_NONE.glob("*cpu_after_optimizations.txt")).read_text()
    result = run("-", "--format", "json", stdin=text)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert "allocation_bytes" not in data and "xla_peak_bytes" not in data
    assert "not XLA's allocation" in run("-", stdin=text).output


def test_csv_is_the_timeline_of_top_level_steps(tmp_path: Path) -> None:
    out = tmp_path / "timeline.csv"
    result = run(str(SCANNED), "-o", str(out))
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert list(rows[0]) == ["step", "time", "instruction", "opcode", "phase", "live_bytes",
                             "inner_peak_bytes"]
    loops = [row for row in rows if row["opcode"] == "while"]
    assert len(loops) == 2 and all(row["inner_peak_bytes"] for row in loops)
    highest = max(int(row["inner_peak_bytes"] or row["live_bytes"]) for row in rows)
    data = json.loads(run(str(SCANNED), "--format", "json").output)
    assert highest == data["peak_bytes"] >= xla_peak(SCANNED)


def test_text_groups_by_layer_and_sums_the_rest() -> None:
    result = run(str(REMAT_NONE), "--by", "layer", "--top", "3", "--details")
    assert result.exit_code == 0, result.output
    assert "Live at the peak, by layer" in result.output
    assert "layer_0" in result.output and "layer_1" in result.output
    assert "more)" in result.output  # the buffers at the peak: a --details table
    title = "\nBuffers live at the peak, largest first\n"
    assert title in result.output and title not in run(str(REMAT_NONE), "--by", "layer").output


def test_markdown_and_scope_grouping() -> None:
    result = run(str(REMAT_NONE), "--by", "scope", "--depth", "2", "--format", "markdown")
    assert result.exit_code == 0, result.output
    assert "| source scope" in result.output
    assert "| layer_0 " in result.output and "| state/mu " in result.output
    assert "scopes are shown below train_step/" in result.output


def test_tpu_spaces_are_shown_apart() -> None:
    result = run(str(TPU))
    assert result.exit_code == 0, result.output
    rows = [line.split()[:3] for line in result.output.splitlines() if line.startswith("S(")]
    assert rows[:2] == [["S(0)", "HBM", "device"], ["S(1)", "VMEM", "on-chip"]]
    assert "device figures count:                S(0) HBM (S(1) VMEM" in result.output
    assert "live peak, tile-padded" in result.output


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<?xml")])
def test_plot_is_drawn_and_never_overwritten_without_force(tmp_path: Path, suffix: str,
                                                           magic: bytes) -> None:
    pytest.importorskip("matplotlib")
    plot = tmp_path / f"timeline{suffix}"
    assert run(str(SCANNED), "--plot", str(plot)).exit_code == 0
    assert plot.read_bytes().startswith(magic)
    refused = run(str(SCANNED), "--plot", str(plot))
    assert refused.exit_code == 2 and "--force" in refused.output
    assert run(str(SCANNED), "--plot", str(plot), "--force").exit_code == 0


def test_a_plot_needs_a_known_suffix(tmp_path: Path) -> None:
    result = run(str(REMAT_NONE), "--plot", str(tmp_path / "timeline.bmp"))
    assert result.exit_code == 2 and ".png" in result.output


def test_an_unscheduled_module_exits_4_and_says_what_to_pass() -> None:
    before = next(REMAT_NONE.glob("*before_optimizations.txt"))
    result = run(str(before))
    assert result.exit_code == 4
    assert "not scheduled" in result.output and "after-optimizations" in result.output


def test_standard_input() -> None:
    text = next(REMAT_NONE.glob("*cpu_after_optimizations.txt")).read_text()
    result = run("-", "--format", "json", stdin=text)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["peak_bytes"] == xla_peak(REMAT_NONE)


def test_a_build_folder_reads_its_dump(tmp_path) -> None:
    """`hloscope build -o DIR` keeps XLA's dump in DIR/dump beside its manifest."""
    import shutil

    shutil.copytree(TPU, tmp_path / "dump")
    (tmp_path / "manifest.json").write_text("{}")
    result = run(str(tmp_path), "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    direct = json.loads(run(str(TPU), "--format", "json").output)
    assert data["peak_bytes"] == direct["peak_bytes"] > 0
    assert data["xla"]["allocation_bytes"] == direct["xla"]["allocation_bytes"] > 0


def test_the_story_on_screen_names_each_figure_for_what_it_is() -> None:
    """The committed OOM build (TPU): XLA's figures under their sources' names, the dump's
    all-spaces figure never called the peak, each difference with its reason."""
    build = FIXTURES / "tpu-v5e-2x2-oom"
    text = run(str(build), "--details").output  # each difference's reason in its row
    short = run(str(build)).output  # by default each reason under the table, by its label
    assert "XLA live-range peak" not in text and "all-spaces live peak" not in text
    dump = find_memory_artifacts(build / "dump").read_live_range()
    [dump_line] = [line for line in text.splitlines() if line.startswith("XLA live-range dump")]
    assert f"t={dump.peak_time}" in dump_line and dump_line.endswith("not a peak")
    assert "XLA allocation (buffer assignment):" in text
    assert "memory_analysis():                   none: the compile ended 'oom'" in text
    data = json.loads(run(str(build), "--format", "json").output)
    rows = {row["key"]: row for row in data["story"]["differences"]}
    for row in rows.values():
        line = next(line for line in text.splitlines() if line.startswith(row["label"]))
        assert line.endswith(row["reason"]) and f"{row['bytes']:+,}" in line
        assert f"\n  {row['label']}: {row['reason'][:40]}" in short


def test_json_keeps_its_keys_and_adds_the_story() -> None:
    data = json.loads(run(str(TPU), "--format", "json").output)
    assert {"peak_bytes", "all_spaces_peak_bytes", "xla_moment_bytes", "allocation_bytes",
            "xla_peak_bytes", "estimated_allocation_bytes", "spaces"} <= set(data)
    assert {"live_peak_bytes", "allocation_bytes", "allocation_by_space"} <= set(data["xla"])
    assert data["memory_analysis_bytes"] is None
    assert [row["label"] for row in data["story"]["spaces"]][:2] == ["S(0) HBM", "S(1) VMEM"]
