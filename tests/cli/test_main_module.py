"""`python -m hloscope` runs the click app, as the `hloscope` script does."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # tests/cli/ -> the repository
FIXTURE = REPO / "fixtures" / "cpu" / "remat-none"


def run_module(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hloscope", *args], capture_output=True,
                          text=True, timeout=120, cwd=REPO)


def test_help_lists_the_commands() -> None:
    result = run_module("--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: hloscope ")  # the same app as the script
    for command in ("inspect", "flops", "memory", "oom", "check"):
        assert command in result.stdout


def test_a_command_runs_and_maps_errors_to_exit_codes() -> None:
    result = run_module("inspect", str(FIXTURE), "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["schema"] == "hloscope/inspect/v1"
    missing = run_module("inspect", str(REPO / "no-such-file.hlo"))
    assert missing.returncode == 3 and "Traceback" not in missing.stderr
