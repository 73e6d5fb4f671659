"""`Program`: what the loader finds beside a module, on the committed fixtures.

Truths: the fixture folders themselves (which files XLA wrote, which manifest `hloscope build`
wrote, the target the TPU OOM build was compiled for) and libtpu's own OOM message in the OOM
build's manifest.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES

import hloscope
from hloscope.configs.config import TransformerConfig
from hloscope.errors import EXIT_INPUT_MISSING, InputError
from hloscope.loader import Program, as_program, load_program, program_of

CPU_FULL = FIXTURES / "cpu" / "remat-full"
TPU_NONE = FIXTURES / "tpu-v5e-2x2" / "remat-none"
GPU_NONE = FIXTURES / "gpu-h100-1x1x8" / "remat-none"
TPU_OOM_BUILD = FIXTURES / "tpu-v5e-2x2-oom"


@pytest.mark.parametrize(("folder", "backend", "suffix"), [
    (CPU_FULL, "cpu", ".cpu_after_optimizations.txt"),
    (TPU_NONE, "tpu", ".after_optimizations.txt"),
    (GPU_NONE, "gpu", ".sm_9.0a_gpu_after_optimizations.txt"),
], ids=["cpu", "tpu", "gpu"])
def test_dump_folder_program_finds_xla_memory_files(folder: Path, backend: str,
                                                    suffix: str) -> None:
    program = load_program(folder)
    assert program.backend == backend
    assert program.hlo_path is not None and program.hlo_path.name.endswith(suffix)
    assert program.dump_folder == folder
    files = program.xla_memory
    base = program.hlo_path.name.removesuffix(".txt")
    assert files.live_range == folder / f"{base}-live-range.txt"
    assert files.buffer_assignment == folder / f"{base}-buffer-assignment.txt"
    assert files.usage_report == folder / f"{base}-memory-usage-report.txt"
    assert program.live_range is not None and program.buffer_assignment is not None
    assert program.build is None and program.given_build is None and program.capture is None
    assert program.target is None and program.compile_log is None


def test_build_folder_program_reads_its_manifest_and_log() -> None:
    manifest = json.loads((TPU_OOM_BUILD / "manifest.json").read_text())
    program = load_program(TPU_OOM_BUILD)
    assert program.hlo_path is not None and program.hlo_path.parent == TPU_OOM_BUILD / "dump"
    assert program.given_build is not None and program.given_build.manifest == manifest
    assert program.build is not None and program.build.folder == TPU_OOM_BUILD
    assert program.target == manifest["target"] == "tpu:v5e:2x2"
    assert program.backend == "tpu"
    config = program.given_build.config.to_dict()  # fields added since: their defaults
    assert {key: config[key] for key in manifest["config"]} == manifest["config"]
    assert TransformerConfig.from_dict(manifest["config"]).to_dict() == config
    log = program.compile_log
    assert log is not None and log.source == str(TPU_OOM_BUILD / "compile.log")
    verdict = log.compile_verdict
    assert verdict is not None and verdict.text in manifest["error"] + (
        TPU_OOM_BUILD / "compile.log").read_text()


def test_a_file_inside_a_build_finds_the_build_but_names_none() -> None:
    dump_file = load_program(TPU_OOM_BUILD).hlo_path
    program = load_program(dump_file)
    assert program.build is not None and program.build.folder == TPU_OOM_BUILD
    assert program.given_build is None and program.compile_log is None
    assert program.target == "tpu:v5e:2x2"


def test_text_and_stdin_like_inputs_have_no_side_files() -> None:
    text = (CPU_FULL / "module_0000.jit_train_step.cpu_after_optimizations.txt").read_text()
    program = load_program(text)
    assert program.source == "<text>" and program.hlo_path is None
    assert not program.xla_memory.found and program.live_range is None
    assert program.build is None and program.capture is None
    assert program.backend == "unknown"  # no file name: hloscope does not guess


def test_a_loaded_module_gives_the_same_program(tmp_path: Path) -> None:
    module = hloscope.load(CPU_FULL)
    assert isinstance(module, hloscope.HloModule)
    program = program_of(module)
    assert as_program(module).hlo_path == program.hlo_path == load_program(CPU_FULL).hlo_path
    assert program.live_range.peak_bytes == load_program(CPU_FULL).live_range.peak_bytes
    assert as_program(program) is program
    assert isinstance(hloscope.load_program(CPU_FULL), Program)
    log = tmp_path / "x.log"
    log.write_text("nothing to see\n")
    assert as_program(program, log_path=log).compile_log.source == str(log)


def test_a_named_log_replaces_the_builds_but_keeps_its_error(tmp_path: Path) -> None:
    log = tmp_path / "other.log"
    log.write_text("a line\n")
    program = load_program(TPU_OOM_BUILD, log_path=log)
    assert program.compile_log.source == str(log)
    assert program.compile_log.compile_verdict is not None  # from the manifest's error


def test_a_bad_manifest_fails_only_where_the_build_is_used(tmp_path: Path) -> None:
    folder = tmp_path / "build"
    shutil.copytree(TPU_OOM_BUILD, folder)
    (folder / "manifest.json").write_text("{not json")
    program = load_program(folder)  # the module still loads from dump/
    assert program.module.name.startswith("jit_train_step")
    assert program.build is None  # found leniently: ignored
    with pytest.raises(InputError) as raised:
        _ = program.given_build
    assert raised.value.exit_code == EXIT_INPUT_MISSING and "not a build folder" in str(
        raised.value)


def test_memory_api_takes_a_program_and_finds_xla_figures() -> None:
    program = load_program(CPU_FULL)
    result = hloscope.memory(program)
    assert result.xla is not None and result.xla.live_peak_bytes == program.live_range.peak_bytes
    assert hloscope.memory(CPU_FULL).to_dict() == result.to_dict()


def test_the_compile_record_is_the_builds_main_modules_only(tmp_path: Path) -> None:
    """The manifest records the compile of the build's main module (`files.dump_module`); any
    other module in its dump has none."""
    manifest = json.loads((TPU_OOM_BUILD / "manifest.json").read_text())
    record = load_program(TPU_OOM_BUILD).compile_record
    assert record is not None and record.status == manifest["compile"]["status"] == "oom"
    build = tmp_path / "build"
    shutil.copytree(TPU_OOM_BUILD, build)
    main = build / "dump" / manifest["files"]["dump_module"]
    other = build / "dump" / "module_0009.other.after_optimizations.txt"
    shutil.copy(main, other)
    assert load_program(main).compile_record is not None
    program = load_program(other)
    assert program.build is not None and program.compile_record is None
    assert load_program(CPU_FULL).compile_record is None
