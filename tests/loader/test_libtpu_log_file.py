"""Finding libtpu's INFO log of a build: its compile.log, else libtpu's own file of that pid."""
from __future__ import annotations

from pathlib import Path

from hloscope.loader.libtpu_log_file import libtpu_log_text

CHOSE = "I1125 05:04:27.306411    3103 hlo_memory_scheduler.cc:619] Chose min-memory dfs sequence: 12.48GiB\n"  # noqa: E501
FIRST = "I1125 05:04:01.000001    3103 tpu_compiler.cc:1] compiling\n"


def _build(tmp_path: Path, log: str) -> Path:
    folder = tmp_path / "build"
    folder.mkdir()
    (folder / "compile.log").write_text(log)
    return folder


def test_the_compile_log_when_it_holds_libtpus_lines(tmp_path):
    folder = _build(tmp_path, FIRST + CHOSE)
    assert libtpu_log_text(folder, tmp_path / "none") == FIRST + CHOSE


def test_libtpus_own_file_of_the_compile_process(tmp_path):
    folder = _build(tmp_path, FIRST)
    logs = tmp_path / "tpu_logs"
    logs.mkdir()
    (logs / "tpu_driver.host.root.log.INFO.20261125-050401.3104").write_text(CHOSE)  # other pid
    assert libtpu_log_text(folder, logs) is None
    (logs / "tpu_driver.host.root.log.INFO.20261125-050401.3103").write_text(FIRST + CHOSE)
    assert libtpu_log_text(folder, logs) == FIRST + CHOSE


def test_none_without_a_compile_log(tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    assert libtpu_log_text(folder, tmp_path) is None
