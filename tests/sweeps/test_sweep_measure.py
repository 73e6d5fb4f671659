"""`sweep --measure`: the fastest predicted variants run on the local device and ranked by what
they measure there (hloscope/sweeps/measure.py). The CPU is a real device: the live test runs
the tiny model's variants on it."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_ranking import figures

from hloscope.cli.main import cli
from hloscope.sweeps.core import SweepResult
from hloscope.sweeps.measure import MeasuredStep, with_measured_ranking
from hloscope.sweeps.ranking import rank_variants


def measured(variant: str, predicted: float, seconds: float) -> MeasuredStep:
    return MeasuredStep(variant, predicted, "per-op", seconds, (seconds, seconds), 8 * 4096,
                        f"/runs/{variant}")


def test_the_measured_step_ranks_and_stands_beside_the_prediction() -> None:
    rows = [figures("a", 1.0, 0.0), figures("b", 1.2, 0.0), figures("c", 1.4, 0.0)]
    winner, verdicts = rank_variants(rows)
    assert winner == "a"
    result = SweepResult(None, [], winner, verdicts, 1.0, 3, 0)  # type: ignore[arg-type]
    ranked = with_measured_ranking(result, [measured("a", 1.0, 2.0), measured("b", 1.2, 1.5)])
    assert ranked.winner == "b" and [m.variant for m in ranked.measured] == ["b", "a"]
    assert ranked.verdicts["b"].reason == (
        "fastest measured (1500.0 ms measured, 1200.0 ms predicted, -20.0%)")
    assert ranked.verdicts["a"].rank == 2 and ranked.verdicts["a"].reason.startswith(
        "slower measured: 16,384 tokens/s vs 21,845 for b")
    assert ranked.verdicts["c"].rank == 3 and ranked.verdicts["c"].reason.endswith(
        "; not measured")
    assert ranked.measured[0].error == pytest.approx(1.2 / 1.5 - 1)


def test_a_target_whose_devices_are_not_here_is_refused_before_compiling(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["sweep", "--model", "tiny", "--target", "tpu:v5e:2x2",
                                      "--policies", "none", "--measure", "1",
                                      "--cache-dir", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "--measure runs each variant on one local device; tpu:v5e:2x2 has 4" in result.output
    assert not any(tmp_path.iterdir())


@pytest.mark.compile
def test_measure_runs_the_fastest_on_the_cpu_and_ranks_by_what_it_measured(
        tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    result = CliRunner().invoke(cli, [
        "sweep", "--model", "tiny", "--target", "cpu", "--layers", "1", "--seq", "32",
        "--batch", "4", "--policies", "none,full,dots_saveable", "--measure", "2",
        "--measure-steps", "3", "--cache-dir", str(tmp_path / "cache"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "Measured on the device (ranks the variants)" in result.output
    data = json.loads((out / "sweep.json").read_text())
    assert data["ranked_by"] == "measured" and len(data["measured"]) == 2
    steps = data["measured"]
    for step in steps:
        assert len(step["step_seconds"]) >= 2
        assert step["measured_seconds"] == statistics.median(step["step_seconds"])
        assert step["predicted_by"] == "per-op (rates measured on this CPU)"
        assert step["predicted_seconds"] > 0
        assert step["error"] == pytest.approx(
            step["predicted_seconds"] / step["measured_seconds"] - 1)
        assert (Path(step["folder"]) / "profile.json").exists()
    assert data["winner"] == min(steps, key=lambda s: s["measured_seconds"])["variant"]
    variants = {row["variant"]: row for row in data["variants"]}
    assert variants[data["winner"]]["rank"] == 1
