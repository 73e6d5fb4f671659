"""issue 21, item 4: the repository's GitHub Action (`action.yml`), its steps run as a runner
runs them (`oracles/composite_action.py`) against a fixture pair.

Truth: the fixtures' own meta.json (XLA's cost_analysis() FLOPs): the fully rematerialized
program does more FLOPs than the one without remat, so a 0% FLOPs threshold must fail it and a
100% one must pass it.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO

pytest.importorskip("yaml")
from composite_action import hloscope_on_path, run_action  # noqa: E402

ACTION = REPO / "action.yml"
NONE = FIXTURES / "cpu" / "remat-none"
FULL = FIXTURES / "cpu" / "remat-full"


def _flops(folder: Path) -> float:
    return json.loads((folder / "meta.json").read_text())["cost"]["flops"]


@pytest.fixture()
def setup(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    env = hloscope_on_path(tmp_path / "bin", REPO)
    baseline = tmp_path / "baseline.json"
    import subprocess

    subprocess.run(["hloscope", "snapshot", str(NONE), "-o", str(baseline)], env=env,
                   check=True, capture_output=True)
    return baseline, env


def _run(tmp_path: Path, env: dict[str, str], **inputs: str):
    return run_action(ACTION, {"program": str(FULL), **inputs}, tmp_path, env)


def test_a_regression_fails_with_summary_and_comment(tmp_path: Path, setup) -> None:
    baseline, env = setup
    assert _flops(FULL) > _flops(NONE)
    run = _run(tmp_path, env, baseline=str(baseline), thresholds="--max-flops-increase 0%")
    assert run.returncode == 1
    assert run.outputs("check") == {"comment-file": "hloscope-comment.md", "passed": "false"}
    comment = (tmp_path / "hloscope-comment.md").read_text()
    assert comment.startswith("# ") and "total_flops" in comment
    assert comment.strip() in run.summary
    assert "not installed" not in run.steps[0].stdout  # the PATH's hloscope was used


def test_within_the_thresholds_passes(tmp_path: Path, setup) -> None:
    baseline, env = setup
    run = _run(tmp_path, env, baseline=str(baseline), thresholds="--max-flops-increase 100%")
    assert run.returncode == 0 and run.outputs("check")["passed"] == "true"
    assert run.summary.startswith("# ")


def test_report_only_and_refusals(tmp_path: Path, setup) -> None:
    baseline, env = setup
    run = _run(tmp_path, env, baseline=str(baseline), thresholds="--max-flops-increase 0%",
               **{"fail-on-regression": "false"})
    assert run.returncode == 0 and run.outputs("check")["passed"] == "false"
    shutil.rmtree(tmp_path / "runner-temp")
    refused = _run(tmp_path, env, baseline=str(baseline), thresholds=" ")
    assert refused.returncode == 2  # a gate that checks nothing
    assert "threshold" in refused.steps[-1].stderr
