"""Default text output fits 120 columns on every command (issue 38, item 2), in a pipe as on a
terminal, and the main question's sweep fits a screen: at most 40 lines.

Truth: the character count of each line the command prints on the committed fixtures (and, for
the commands that compile, on the tiny model for the CPU); `--details` is what may be wider.
Every command of the CLI is listed here, so a new one cannot skip the rule."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from hloscope.cli.main import cli

WIDTH = 120
TPU_NONE = FIXTURES / "tpu-v5e-2x2" / "remat-none"
TPU_FULL = FIXTURES / "tpu-v5e-2x2" / "remat-full"
CPU_SCAN = FIXTURES / "cpu" / "scan-remat-none"
OOM = FIXTURES / "tpu-v5e-2x2-oom"
TRACE = FIXTURES / "cpu-trace" / "full-scan"
TINY_CPU = ["--model", "tiny", "--target", "cpu"]

READING = {  # commands that read what is committed: each with its small inputs
    "inspect": [[str(TPU_NONE)], [str(OOM / "dump")]],
    "flops": [[str(TPU_NONE), "--by", by] for by in ("opcode", "scope", "layer", "phase")],
    "remat": [[str(TPU_FULL)], [str(CPU_SCAN), "--by", "scope"]],
    "memory": [[str(TPU_NONE)], [str(OOM)], [str(CPU_SCAN), "--by", "layer"]],
    "oom": [[str(OOM)], [str(TPU_NONE), "--device", "v5e"]],
    "compare": [[str(TPU_NONE), str(TPU_FULL), "--device", "v5e"]],
    "snapshot": [[str(TPU_NONE)]],
    "policies": [TINY_CPU, ["--model", "llama-1b", "--target", "tpu:v5e:2x2"]],
    "trace": [[str(TRACE)], [str(TRACE), "--by", "op"]],
}
COMPILING = {"sweep", "build", "profile"}  # test_compiling_commands_fit
APART = {"check", "report"}  # need a baseline or write a file: test_check_fits, test_report_...


def widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def invoke(*arguments: str, env: dict[str, str] | None = None) -> str:
    result = CliRunner(env=env).invoke(cli, list(arguments), catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output  # 1: a check failed, a config does not fit
    return result.stdout


@pytest.fixture(autouse=True)
def no_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)  # a pipe with no terminal width given


def test_every_command_is_checked() -> None:
    assert set(cli.commands) == set(READING) | COMPILING | APART


@pytest.mark.parametrize(("command", "arguments"),
                         [(c, a) for c, runs in READING.items() for a in runs],
                         ids=lambda value: value if isinstance(value, str) else "")
def test_default_text_fits_120_columns(command: str, arguments: list[str]) -> None:
    assert widest(invoke(command, *arguments)) <= WIDTH


def test_check_fits(tmp_path: Path) -> None:
    baseline = tmp_path / "none.json"
    invoke("snapshot", str(TPU_NONE), "-o", str(baseline))
    shown = invoke("check", str(TPU_FULL), "--baseline", str(baseline),
                   "--max-peak-increase", "2%", "--max-flops-increase", "1%", "--device", "v5e")
    assert "failed" in shown and widest(shown) <= WIDTH


def test_report_prints_fitting_lines(tmp_path: Path) -> None:
    shown = invoke("report", str(TPU_NONE), str(TPU_FULL), "-o", str(tmp_path / "r.html"))
    assert (tmp_path / "r.html").exists() and widest(shown) <= WIDTH


def test_a_wider_terminal_still_gets_120_columns_and_details_get_more() -> None:
    short = invoke("oom", str(OOM), env={"COLUMNS": "250"})
    details = invoke("oom", str(OOM), "--details", env={"COLUMNS": "250"})
    assert widest(short) <= WIDTH < widest(details) <= 250


def test_a_text_file_holds_everything(tmp_path: Path) -> None:
    invoke("oom", str(OOM), "-o", str(tmp_path / "oom.txt"))
    written = (tmp_path / "oom.txt").read_text()
    assert written == invoke("oom", str(OOM), "--details")  # a pipe with --details: never cut
    assert "\nSteps around the peak\n" in written and widest(written) > WIDTH


@pytest.mark.compile
def test_compiling_commands_fit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The done-when of issue 38: `hloscope sweep --model tiny --target cpu --policies none,full`
    prints at most 120 columns and 40 lines; its every figure stays in --details and JSON."""
    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    sweep = ["sweep", *TINY_CPU, "--policies", "none,full"]
    shown = invoke(*sweep)
    assert widest(shown) <= WIDTH and len(shown.splitlines()) <= 40
    assert shown.startswith("Sweep: tiny on cpu") and shown.split("\n\n")[1].startswith("winner:")
    details = invoke(*sweep, "--details")
    data = json.loads(invoke(*sweep, "--format", "json"))
    for header in ("live peak", "compile s", "recompute", "offloaded", "reason"):
        assert header in details and header not in shown.split("Variants", 1)[1].splitlines()[1]
    assert "\nCheckpoint names\n" in details and "\nCheckpoint names\n" not in shown
    for row in data["variants"]:  # each reason under the table, by its variant
        assert f"\n  {row['variant']}: {row['reason'][:60]}" in shown
        assert row["checkpoint_names"] and row["live_peak_bytes"] > 0
    build = invoke("build", *TINY_CPU, "--policy", "full", "-o", str(tmp_path / "full"))
    assert widest(build) <= WIDTH and "\nCheckpoint names\n" not in build
    profile = invoke("profile", "--model", "tiny", "--policy", "full", "--steps", "1",
                     "-o", str(tmp_path / "profile"))
    assert widest(profile) <= WIDTH
    frontier = invoke(*sweep[:5], "--search", "frontier", "--batch", "8", "--seq", "64",
                      "--capacity", "64MiB", "--names", "qkv", "--choices", "device,remat",
                      "-o", str(tmp_path / "frontier"))
    assert frontier.startswith("Per-tensor policy frontier") and widest(frontier) <= WIDTH
