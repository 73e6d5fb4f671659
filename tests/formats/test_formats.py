"""The files hloscope writes: write then read gives back what was written, the schema strings,
the bytes the commands' JSON output has, and the errors (with exit codes) bad files give."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES

from hloscope.errors import EXIT_INPUT_MALFORMED, EXIT_INPUT_MISSING, InputError, ParseError
from hloscope.formats.build import (
    BUILD_MANIFEST_SCHEMA,
    BuildFolder,
    find_build,
    manifest_files,
    read_build,
    write_build_files,
)
from hloscope.formats.capture import CAPTURE_SCHEMA, CaptureInfo, find_capture, read_capture
from hloscope.formats.capture import write_capture as write_capture_file
from hloscope.formats.compile_record import CompileResult, MemoryFigures
from hloscope.formats.json_text import document_text
from hloscope.formats.profile import (
    PROFILE_SCHEMA,
    find_dump_folder,
    read_profile_manifest,
    write_profile_manifest,
)
from hloscope.formats.snapshot import SNAPSHOT_SCHEMA, Snapshot, read_snapshot, snapshot_text
from hloscope.formats.sweep import (
    SWEEP_SCHEMA,
    is_sweep_folder,
    read_sweep,
    sweep_text,
    write_sweep,
)
from hloscope.reports.registry import render
from hloscope.reports.report import Report

TPU_OOM_BUILD = FIXTURES / "tpu-v5e-2x2-oom"
SNAPSHOT = Snapshot("jit_step", {"peak_bytes": 1 << 30, "total_flops": 12, "fusions": None},
                    {"backend": "tpu", "jax": "0.4.1", "jaxlib": None, "libtpu": None,
                     "xla_flags": None}, ["memory n/a"])


def test_snapshot_round_trip_and_bytes(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(snapshot_text(SNAPSHOT))
    assert read_snapshot(path) == SNAPSHOT
    text = path.read_text()
    assert text == render(Report("snapshot", "t", data=SNAPSHOT.to_dict()), "json")
    assert list(json.loads(text)) == ["schema", "metrics", "module", "notes", "toolchain"]
    assert json.loads(text)["schema"] == SNAPSHOT_SCHEMA == "hloscope/snapshot/v1"


def test_committed_baseline_layout_is_unchanged() -> None:
    """The exact text a baseline had before formats/ existed (users keep these files)."""
    expected = ('{\n  "schema": "hloscope/snapshot/v1",\n  "metrics": {\n    "fusions": null,\n'
                '    "peak_bytes": 1073741824,\n    "total_flops": 12\n  },\n'
                '  "module": "jit_step",\n  "notes": [\n    "memory n/a"\n  ],\n'
                '  "toolchain": {\n    "backend": "tpu",\n    "jax": "0.4.1",\n'
                '    "jaxlib": null,\n    "libtpu": null,\n    "xla_flags": null\n  }\n}\n')
    assert snapshot_text(SNAPSHOT) == expected


@pytest.mark.parametrize(("text", "code", "where"), [
    ('{\n  "schema": "hloscope/snapshot/v1",\n  "metrics": {,}\n}\n', EXIT_INPUT_MALFORMED,
     (3, 15)),
    ('{"schema": "hloscope/other/v1", "metrics": {}}', EXIT_INPUT_MALFORMED, (1, 1)),
    ('{"schema": "hloscope/snapshot/v1", "metrics": {"a": 1.5}}', EXIT_INPUT_MALFORMED, (1, 1)),
], ids=["not-json", "other-schema", "float-metric"])
def test_bad_baselines_are_parse_errors_at_a_place(tmp_path: Path, text: str, code: int,
                                                    where: tuple[int, int]) -> None:
    path = tmp_path / "b.json"
    path.write_text(text)
    with pytest.raises(ParseError) as raised:
        read_snapshot(path)
    assert raised.value.exit_code == code
    assert (raised.value.location.line, raised.value.location.column) == where
    assert raised.value.location.source == str(path)


def test_missing_baseline_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as raised:
        read_snapshot(tmp_path / "absent.json")
    assert raised.value.exit_code == EXIT_INPUT_MISSING


def test_build_manifest_round_trip(tmp_path: Path) -> None:
    manifest = {"model": "tiny", "variant": "full", "target": "cpu", "error": None,
                "files": manifest_files("module_0000.jit_train_step.cpu_after_optimizations.txt"),
                "compile": {"target": "cpu", "status": "ok"}}
    written = write_build_files(tmp_path, manifest, {"temp_bytes": 1}, None)
    read = read_build(tmp_path)
    assert read == written == BuildFolder(tmp_path, {"schema": BUILD_MANIFEST_SCHEMA, **manifest})
    assert next(iter(json.loads((tmp_path / "manifest.json").read_text()))) == "schema"
    assert json.loads((tmp_path / "memory_analysis.json").read_text()) == {"temp_bytes": 1}
    assert json.loads((tmp_path / "cost_analysis.json").read_text()) is None
    assert read.dump_module == tmp_path / "dump" / manifest["files"]["dump_module"]
    assert read.result.status == "ok" and read.result.dump_dir == str(tmp_path / "dump")
    assert read.hlo_path is None and read.log_text() == ""


def test_committed_build_is_read_and_found() -> None:
    build = read_build(TPU_OOM_BUILD)
    assert build.manifest["schema"] == BUILD_MANIFEST_SCHEMA == "hloscope/build-manifest/v1"
    assert build.target == "tpu:v5e:2x2" and build.result.status == "oom"
    dump_file = next((TPU_OOM_BUILD / "dump").glob("*after_optimizations.txt"))
    assert find_build(dump_file) == build


def test_bad_build_folders(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a build folder") as raised:
        read_build(tmp_path)
    assert raised.value.exit_code == EXIT_INPUT_MISSING
    (tmp_path / "manifest.json").write_text('{"schema": "something/else"}')
    with pytest.raises(InputError, match="not a hloscope/build-manifest/v1 manifest"):
        read_build(tmp_path)
    assert find_build(tmp_path / "optimized_hlo.txt") is None


def test_compile_record_round_trip() -> None:
    result = CompileResult("tpu:v5e:2x2", "ok", "/d", "jit_f",
                           MemoryFigures(1, 2, 0, 3, peak_bytes=7), None, 0.5, 1.5,
                           {"jax": "0.4"}, None)
    assert CompileResult.from_dict(result.to_dict()) == result
    assert result.to_dict()["memory"]["allocated_bytes"] == 6


def _sweep_data(tmp_path: Path) -> dict:
    build = tmp_path / "builds" / "remat-full"
    (build / "dump").mkdir(parents=True)
    rows = [{"variant": "remat:full", "status": "ok", "fits": True, "reason": "fastest",
             "required_bytes": 10, "total_flops": 1e12, "build_folder": None, "step_seconds":
             float("inf")},
            {"variant": "none", "status": "oom", "fits": False, "reason": "does not fit",
             "required_bytes": None, "total_flops": None, "build_folder": None}]
    return {"model": "tiny", "target": "cpu", "winner": "remat:full", "capacity_bytes": 99,
            "variants": rows, "notes": ["a note"]}


def test_sweep_round_trip_and_bytes(tmp_path: Path) -> None:
    data = _sweep_data(tmp_path)
    path = write_sweep(tmp_path, data)
    assert path == tmp_path / "sweep.json" and is_sweep_folder(tmp_path)
    assert path.read_text() == sweep_text(data) == render(Report("sweep", "t", data=data), "json")
    record = read_sweep(tmp_path)
    assert record == read_sweep(path)
    assert record.data == {"schema": SWEEP_SCHEMA, **data, "variants": [
        {**data["variants"][0], "step_seconds": None}, data["variants"][1]]}
    assert (record.model, record.target, record.winner, record.capacity_bytes) == (
        "tiny", "cpu", "remat:full", 99)
    assert record.notes == ["a note"] and record.folder == tmp_path
    full, none = record.variants
    assert (full.variant, full.fits, full.required_bytes, full.reason) == (
        "remat:full", True, 10, "fastest")
    assert full.build_in(tmp_path) == tmp_path / "builds" / "remat-full"
    assert none.build_in(tmp_path) is None and none.status == "oom"


@pytest.mark.parametrize("text", ["{", '{"variants": 3}', '[1]',
                                  '{"schema": "hloscope/other/v1", "variants": []}'])
def test_bad_sweep_files_are_input_errors(tmp_path: Path, text: str) -> None:
    (tmp_path / "sweep.json").write_text(text)
    with pytest.raises(InputError) as raised:
        read_sweep(tmp_path)
    assert raised.value.exit_code == EXIT_INPUT_MISSING
    assert str(tmp_path / "sweep.json") in str(raised.value)


def test_capture_round_trip(tmp_path: Path) -> None:
    info = CaptureInfo(str(tmp_path), "step", "tpu:v5e:2x2", "oom", "RESOURCE_EXHAUSTED", False)
    write_capture_file(info, {"status": "oom"})
    data = json.loads((tmp_path / "capture.json").read_text())
    assert data["schema"] == CAPTURE_SCHEMA == "hloscope/capture/v1"
    assert data["compile"] == {"status": "oom"}
    assert read_capture(tmp_path) == info and info.device == "v5e"
    assert find_capture(tmp_path / "dump" / "module_0000.f.after_optimizations.txt") == info
    assert find_capture(tmp_path / "module_0000.f.after_optimizations.txt") is None
    (tmp_path / "capture.json").write_text('{"schema": "other"}')
    assert read_capture(tmp_path) is None


def test_profile_manifest_round_trip(tmp_path: Path) -> None:
    write_profile_manifest(tmp_path, {"model": "tiny", "variant": "none", "steps": 2})
    assert next(iter(json.loads((tmp_path / "profile.json").read_text()))) == "schema"
    read = read_profile_manifest(tmp_path)
    assert (read.model, read.variant, read.steps) == ("tiny", "none", 2)
    assert read.data["schema"] == PROFILE_SCHEMA == "hloscope/profile-manifest/v1"
    with pytest.raises(InputError) as raised:
        read_profile_manifest(tmp_path / "absent")
    assert raised.value.exit_code == EXIT_INPUT_MISSING


def test_committed_profile_folder() -> None:
    folder = FIXTURES / "cpu-trace" / "full-scan"
    profile = read_profile_manifest(folder)
    assert profile.steps == json.loads((folder / "profile.json").read_text())["steps"]
    assert find_dump_folder(folder) is None  # the fixture keeps its HLO in hlo/, not dump/


def test_a_profile_folders_dump_is_found_from_its_trace(tmp_path: Path) -> None:
    run = tmp_path / "trace" / "plugins" / "profile" / "2024_01_01"
    run.mkdir(parents=True)
    (run / "host.xplane.pb").write_bytes(b"")
    assert find_dump_folder(run / "host.xplane.pb") is None
    (tmp_path / "dump").mkdir()
    assert find_dump_folder(run / "host.xplane.pb") == tmp_path / "dump"
    assert find_dump_folder(tmp_path) == tmp_path / "dump"


def test_documents_keep_schema_first_and_replace_a_schema_in_the_body() -> None:
    text = document_text("hloscope/x/v1", {"a": 1, "schema": "ignored", "b": float("nan")})
    assert text == '{\n  "schema": "hloscope/x/v1",\n  "a": 1,\n  "b": null\n}\n'
