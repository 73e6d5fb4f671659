"""The memory story (`story.py`, `MemoryResult.story`) against XLA's own numbers.

Each committed fixture is read as a `hloscope build` folder made from it: its dump under dump/
and a manifest whose compile record is the fixture's meta.json (what `compiled.memory_analysis()`
returned when it was compiled). The truths: meta.json's memory_analysis() figures, and XLA's
buffer assignment and live-range dump of the same compile (their figures are checked against
memory_analysis() in tests/parsers/test_xla_memory_fixtures.py). The OOM fixture is a real build
whose compile failed; a fixture folder itself is a plain dump folder.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES

import hloscope
from hloscope.analyses.memory.analysis import MemoryResult
from hloscope.formats.build import manifest_files, write_build_files
from hloscope.parsers.xla_memory import find_memory_artifacts, space_allocation, space_allocations

FOLDERS = sorted(p.parent for p in FIXTURES.glob("*/*/meta.json"))
TPU = [p for p in FOLDERS if p.parent.name.startswith("tpu")]
RECORD = ("target", "status", "module_name", "memory", "cost", "lower_seconds",
          "compile_seconds", "versions")


def _id(folder: Path) -> str:
    return f"{folder.parent.name}/{folder.name}"


def backend(folder: Path) -> str:
    return folder.parent.name.split("-")[0]


def meta(folder: Path) -> dict:
    return json.loads((folder / "meta.json").read_text())


def as_build(folder: Path, into: Path) -> Path:
    """`folder` as the build folder `hloscope build` would have written for its compile."""
    data = meta(folder)
    (into / "dump").mkdir(parents=True)
    for name in data["files"]:
        shutil.copy(folder / name, into / "dump" / name)
    main = next(name for name in data["files"] if name.endswith("after_optimizations.txt"))
    write_build_files(into, {"target": data["target"], "status": data["status"],
                             "files": manifest_files(main),
                             "compile": {key: data[key] for key in RECORD}},
                      data["memory"], data["cost"])
    return into


@pytest.fixture(scope="module", params=FOLDERS, ids=_id)
def built(request, tmp_path_factory) -> tuple[Path, MemoryResult]:
    folder = request.param
    build = as_build(folder, tmp_path_factory.mktemp(_id(folder).replace("/", "-")))
    return folder, hloscope.memory(build)


def differences(result: MemoryResult) -> dict:
    return {d.key: d for d in result.story.differences}


def test_memory_analysis_stands_on_the_device_row(built) -> None:
    folder, result = built
    expected = meta(folder)["memory"]
    device = result.story.device
    assert device is not None and device.location == "device"
    assert device.memory_analysis_bytes == expected["allocated_bytes"]
    assert [row for row in result.story.spaces if row.memory_analysis_bytes is not None] == [
        device]
    assert result.xla.memory_analysis == expected


def test_xla_allocation_per_space_is_the_buffer_assignments(built) -> None:
    folder, result = built
    assignment = find_memory_artifacts(folder).read_buffer_assignment()
    xla = {space.color: space.allocated_bytes for space in space_allocations(assignment)}
    rows = {row.memory_space: row for row in result.story.spaces}
    assert {n: row.xla_allocation_bytes for n, row in rows.items()} == xla
    assert {n: row.live_peak_bytes for n, row in rows.items()} == {
        space.memory_space: space.peak_bytes for space in result.spaces}


@pytest.mark.parametrize("folder", [p for p in FOLDERS if p not in TPU], ids=_id)
def test_cpu_and_gpu_memory_analysis_is_the_allocation(folder: Path, tmp_path: Path) -> None:
    result = hloscope.memory(as_build(folder, tmp_path / "build"))
    found = differences(result)
    assert found["memory_analysis_minus_allocation"].bytes == 0
    assert "adds up the buffer assignment" in found["memory_analysis_minus_allocation"].reason
    allocated = meta(folder)["memory"]["allocated_bytes"]
    estimate = found["estimated_minus_memory_analysis"]
    assert (estimate.ours, estimate.theirs) == (result.estimated_allocation_bytes, allocated)
    assert abs(estimate.share) < 0.02
    assert estimate.reason == found["estimated_minus_allocation"].reason


@pytest.mark.parametrize("folder", TPU, ids=_id)
def test_tpu_memory_analysis_differs_in_libtpus_temporaries(folder: Path, tmp_path: Path) -> None:
    """libtpu's memory_analysis() is HBM only: the buffer assignment's S(0) arguments, outputs
    and aliases, and temporaries of its own."""
    result = hloscope.memory(as_build(folder, tmp_path / "build"))
    expected = meta(folder)["memory"]
    hbm = space_allocation(find_memory_artifacts(folder).read_buffer_assignment(), 0)
    found = differences(result)
    gap = found["memory_analysis_minus_allocation"]
    assert (gap.ours, gap.theirs) == (expected["allocated_bytes"], hbm.allocated_bytes)
    assert gap.bytes == expected["temp_bytes"] - hbm.temp_bytes > 0
    assert f"only temporaries differ ({gap.bytes:+,} B)" in gap.reason
    assert "per HBM tuple table" in gap.reason
    assert found["estimated_minus_allocation"].theirs == hbm.allocated_bytes
    assert found["estimated_minus_allocation"].bytes == 0
    assert found["estimated_minus_memory_analysis"].bytes == -gap.bytes
    assert "libtpu" in found["estimated_minus_memory_analysis"].reason


def test_every_difference_has_its_reason_in_one_line(built) -> None:
    _, result = built
    assert len(result.story.differences) >= 5
    for difference in result.story.differences:
        assert difference.reason and "\n" not in difference.reason, difference.key
        assert difference.bytes == difference.ours - difference.theirs


def test_the_live_range_dump_is_compared_only_with_the_same_values(built) -> None:
    """XLA's dump figure is the values live at the moment it picks, every space added: on TPU
    it is set against hloscope's count of those values only, never against a device figure."""
    folder, result = built
    dump = find_memory_artifacts(folder).read_live_range()
    against_dump = {d.key: d for d in result.story.differences if d.theirs == dump.peak_bytes}
    moment = against_dump.pop("moment_minus_live_range_dump")
    assert moment.ours == dump.peak_bytes and moment.bytes == 0
    if folder in TPU:
        assert against_dump == {}
        assert any("adds S(1) VMEM" in note for note in result.story.notes)
    else:
        assert set(against_dump) == {"live_peak_minus_live_range_dump"}
        assert against_dump["live_peak_minus_live_range_dump"].ours == result.peak_bytes


@pytest.mark.parametrize("folder", TPU, ids=_id)
def test_tpu_rows_put_hbm_first_and_on_chip_spaces_apart(folder: Path) -> None:
    rows = hloscope.memory(folder).story.spaces
    assert [(row.memory_space, row.location) for row in rows[:3]] == [
        (0, "device"), (1, "on-chip"), (2, "on-chip")]
    assert sum(row.live_peak_bytes for row in rows if row.location == "device") == \
        hloscope.memory(folder).peak_bytes


def test_a_plain_dump_folder_says_memory_analysis_is_not_recorded() -> None:
    result = hloscope.memory(FIXTURES / "cpu" / "remat-none")
    assert result.xla.memory_analysis is None
    assert "plain dump folder" in result.xla.memory_analysis_note
    assert "memory_analysis_minus_allocation" not in differences(result)
    assert result.story.device.memory_analysis_bytes is None


def test_a_failed_compile_has_no_memory_analysis() -> None:
    """The committed OOM build: libtpu's compile failed, its manifest records no figures."""
    build = FIXTURES / "tpu-v5e-2x2-oom"
    manifest = json.loads((build / "manifest.json").read_text())
    assert manifest["compile"]["memory"] is None
    result = hloscope.memory(build)
    assert result.xla.memory_analysis is None
    assert "'oom'" in result.xla.memory_analysis_note
    assert differences(result)["estimated_minus_allocation"].theirs == result.xla.allocation_bytes


def test_hlo_text_alone_tells_no_xla_story() -> None:
    text = next((FIXTURES / "cpu" / "remat-none").glob("*cpu_after_optimizations.txt"))
    result = hloscope.memory(text.read_text())
    assert result.xla is None and result.story.differences == []
    assert result.story.device.estimated_allocation_bytes == result.estimated_allocation_bytes
