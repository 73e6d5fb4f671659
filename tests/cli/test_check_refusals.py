"""issue 21, item 5: `check` refuses a gate that checks nothing, and a baseline of another
backend unless --allow-backend-change (exit 2, the usage-error code of docs/commands.md).

Truth: the fixtures' backends are known from their folders (cpu/ and tpu-v5e-2x2/).
"""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from conftest import FIXTURES

from hloscope.cli.main import cli
from hloscope.errors import EXIT_USAGE

CPU = FIXTURES / "cpu" / "remat-none"
TPU = FIXTURES / "tpu-v5e-2x2" / "remat-none"


def _baseline(tmp_path: Path, program: Path) -> Path:
    baseline = tmp_path / f"{program.parent.name}.json"
    taken = CliRunner().invoke(cli, ["snapshot", str(program), "-o", str(baseline)])
    assert taken.exit_code == 0, taken.output
    return baseline


def test_no_threshold_is_refused(tmp_path: Path) -> None:
    baseline = _baseline(tmp_path, CPU)
    result = CliRunner().invoke(cli, ["check", str(CPU), "--baseline", str(baseline)])
    assert result.exit_code == EXIT_USAGE == 2
    assert "threshold" in result.stderr and "Traceback" not in result.output
    within = CliRunner().invoke(cli, ["check", str(CPU), "--baseline", str(baseline),
                                      "--max-peak-increase", "0%"])
    assert within.exit_code == 0, within.output


def test_a_baseline_of_another_backend_is_refused(tmp_path: Path) -> None:
    baseline = _baseline(tmp_path, TPU)
    args = ["check", str(CPU), "--baseline", str(baseline), "--max-flops-increase", "1000%"]
    refused = CliRunner().invoke(cli, args)
    assert refused.exit_code == 2
    assert "TPU" in refused.stderr and "CPU" in refused.stderr
    assert "--allow-backend-change" in refused.stderr
    allowed = CliRunner().invoke(cli, [*args, "--allow-backend-change"])
    assert allowed.exit_code == 0, allowed.output  # the CPU step has fewer FLOPs than 11x TPU's
