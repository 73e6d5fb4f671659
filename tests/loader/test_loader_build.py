"""`load_build`: a build folder read whole for `variant_figures`, which then opens no file."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES

from hloscope.analyses.summary.variant import hlo_figures, variant_figures
from hloscope.formats.build import HLO_FILE, read_build
from hloscope.loader.build import load_build, reported_device_total
from hloscope.loader.hlo_input import load_input

TPU_OOM_BUILD = FIXTURES / "tpu-v5e-2x2-oom"
REPORT_SOURCE = "XLA memory-usage report (default memory space)"


def _copy(tmp_path: Path, hlo_text: str | None = None) -> Path:
    folder = tmp_path / "build"
    shutil.copytree(TPU_OOM_BUILD, folder)
    if hlo_text is not None:
        (folder / HLO_FILE).write_text(hlo_text)
    return folder


def test_a_build_without_hlo_loads_its_report_total_and_log() -> None:
    loaded = load_build(TPU_OOM_BUILD)
    assert loaded.build == read_build(TPU_OOM_BUILD)
    assert loaded.module is None and loaded.load_error is None
    assert loaded.reported_device_bytes == reported_device_total(loaded.build)
    assert loaded.reported_device_bytes is not None and loaded.reported_device_bytes > 0
    assert loaded.log_text == (TPU_OOM_BUILD / "compile.log").read_text(errors="replace")
    assert load_build(loaded.build) == loaded
    figures = variant_figures(loaded, "none")
    assert figures.status == "oom" and figures.fits is False
    assert (figures.required_bytes, figures.required_source) == (
        loaded.reported_device_bytes, REPORT_SOURCE)
    assert figures.hlo is None and figures.analysis_error is None


def test_a_builds_optimized_hlo_is_loaded_and_analysed(tmp_path: Path) -> None:
    dump_module = read_build(TPU_OOM_BUILD).dump_module
    assert dump_module is not None
    loaded = load_build(_copy(tmp_path, dump_module.read_text()))
    assert loaded.module is not None and loaded.load_error is None
    figures = variant_figures(loaded, "none")
    assert figures.analysis_error is None
    assert figures.hlo == hlo_figures(load_input(dump_module), loaded.build)
    assert figures.hlo is not None and figures.hlo.total_flops > 0


def test_an_unreadable_hlo_is_a_reason_not_an_exception(tmp_path: Path) -> None:
    loaded = load_build(_copy(tmp_path, "HloModule broken\n\nENTRY {\n"))
    assert loaded.module is None
    assert loaded.load_error and "\n" not in loaded.load_error
    figures = variant_figures(loaded, "none")
    assert figures.hlo is None and figures.step is None
    assert figures.analysis_error == loaded.load_error
    assert figures.required_source == REPORT_SOURCE  # the rest of the row still stands


def test_a_folder_without_a_manifest_is_refused(tmp_path: Path) -> None:
    from hloscope.errors import InputError

    with pytest.raises(InputError):
        load_build(tmp_path)
