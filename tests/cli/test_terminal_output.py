"""issue 21, item 5: output that fits a terminal and agrees with itself.

Truths: the width the user's terminal gives through $COLUMNS; the HLO text (entry parameters,
source_file paths, read with regexes); stat modes under a set umask; matplotlib's own layout
(the legend's box against the axes' box).
"""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from hloscope.cli.main import cli
from hloscope.reports.renderers import text
from hloscope.reports.report import Quantity, Report

TPU = FIXTURES / "tpu-v5e-2x2" / "remat-none"
CPU = FIXTURES / "cpu" / "remat-none"
SCAN = FIXTURES / "cpu" / "scan-remat-none"
OOM = FIXTURES / "tpu-v5e-2x2-oom"
TRACE = FIXTURES / "cpu-trace" / "full-scan"
COMMANDS = [("oom", str(OOM)), ("memory", str(TPU)), ("inspect", str(TPU)),
            ("trace", str(TRACE), "--by", "op", "--no-xprof"), ("flops", str(TPU), "--by", "scope")]


def _out(*args: str, columns: int | None = None) -> str:
    env = {"COLUMNS": str(columns)} if columns else {}
    result = CliRunner(env=env).invoke(cli, list(args))
    assert result.exit_code in (0, 1), result.output
    return result.stdout


@pytest.mark.parametrize("args", COMMANDS, ids=[c[0] for c in COMMANDS])
@pytest.mark.parametrize("columns", [80, 120])
def test_text_fits_columns(args: tuple[str, ...], columns: int) -> None:
    lines = _out(*args, columns=columns).splitlines()
    assert max(len(line) for line in lines) <= columns


def test_wide_and_details_show_everything() -> None:
    narrow = _out("oom", str(OOM), columns=80)
    wide = _out("oom", str(OOM), "--wide", columns=80)
    piped = _out("oom", str(OOM), "--wide")  # no COLUMNS, not a terminal: --wide is never cut
    assert wide == piped
    assert max(len(line) for line in wide.splitlines()) > 80
    assert "--wide shows" in narrow and "--wide shows" not in wide
    for header in ("predicted peak", "fits"):  # the figures stay; descriptions go first
        assert header in narrow.split("Remedies", 1)[1].splitlines()[1]
    short = _out("oom", str(OOM))  # a pipe by default: 120 columns, the detail tables left out
    details = _out("oom", str(OOM), "--details")  # a pipe with --details: never cut, every table
    assert max(len(line) for line in short.splitlines()) <= 120 < max(
        len(line) for line in details.splitlines())
    title = "\nSteps around the peak\n"
    assert title in details and title not in short
    assert "--wide shows" not in details and "--details shows" in short


def _entry_parameters(folder: Path) -> int:
    hlo = next(folder.glob("*after_optimizations.txt")).read_text()
    entry = hlo[hlo.index("\nENTRY "):]
    entry = entry[:entry.index("\n}")]
    return len(re.findall(r" parameter\(\d+\)", entry))


def test_inspect_top() -> None:
    shown = _out("inspect", str(CPU), "--top", "5", "--format", "markdown")
    block = shown.split("## Entry parameters", 1)[1].split("\n\n")[1].splitlines()[2:]
    total = _entry_parameters(CPU)
    assert len(block) == 6
    assert f"({total - 5} more)" in block[-1]
    assert f"the 5 largest of {total}" in shown


def test_sources_are_relative() -> None:
    hlo = next(TPU.glob("*after_optimizations.txt")).read_text()
    absolute = set(re.findall(r'"(/[^"]+\.py)"', hlo))  # FileNames table
    assert absolute and all(path.startswith("/") for path in absolute)
    shown = _out("memory", str(TPU), "--format", "markdown")
    table = shown.split("## Buffers live at the peak", 1)[1].split("\n\n")[1].splitlines()
    header = [c.strip() for c in table[0].strip("|").split("|")]
    sources = [row.strip("|").split("|")[header.index("source")].strip() for row in table[2:]]
    sources = [s for s in sources if s]
    assert sources
    for source in sources:
        path = source.rpartition(":")[0]
        assert not path.startswith("/")
        assert any(full.endswith("/" + path) for full in absolute)


def test_blank_summary_fields_say_na() -> None:
    report = Report("x", "X", summary=[("capacity", Quantity(None, "bytes")), ("why", None)])
    assert text.render(report).splitlines()[2:] == ["capacity:  n/a", "why:       n/a"]


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640)])
def test_plot_file_mode(tmp_path: Path, umask: int, mode: int) -> None:
    pytest.importorskip("matplotlib")
    old = os.umask(umask)
    try:
        for name in ("t.png", "t.svg"):
            assert CliRunner().invoke(cli, ["memory", str(CPU), "--plot",
                                            str(tmp_path / name)]).exit_code == 0
            assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode
    finally:
        os.umask(old)


def test_one_time_axis_and_a_legend_that_hides_nothing() -> None:
    pytest.importorskip("matplotlib")
    from hloscope.api import memory
    from hloscope.reports.renderers.plot import _draw, load_pyplot

    result = memory(SCAN)
    peak_line = next(ln for ln in _out("memory", str(SCAN)).splitlines()
                     if ln.startswith("peak at:"))
    shown_t = int(re.search(r"t=(\d+)", peak_line).group(1))
    figure, axes = load_pyplot().subplots(figsize=(11, 4.5))
    _draw(axes, result)
    figure.tight_layout()
    figure.canvas.draw()
    marker = next(line for line in axes.get_lines() if line.get_gid() == "peak-marker")
    assert list(marker.get_xdata()) == [shown_t]
    loop = re.search(r"inside (\S+) \(t=(\d+)\)", peak_line)
    if loop:  # the scan's peak is inside its while: the enclosing step is named on the same axis
        steps = {s.instruction: s.time for s in result.timeline}
        assert steps[loop.group(1)] == int(loop.group(2)) >= shown_t
    legend = axes.get_legend().get_window_extent()
    assert not legend.overlaps(axes.get_window_extent())
