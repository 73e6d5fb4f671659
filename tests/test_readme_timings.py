"""The README's timings come from benchmarks/readme_timings.py: the script times the README's own
first command (which the CLI accepts), and any "N min cold" / "N s cached" figure the README
states is the median in the committed results file."""
from __future__ import annotations

import re
import sys
from pathlib import Path

from hloscope.cli.main import cli

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results" / "readme_timings.txt"
sys.path.insert(0, str(REPO / "benchmarks"))

import readme_timings  # noqa: E402


def test_the_script_times_the_readmes_first_command() -> None:
    arguments = readme_timings.readme_main_job()
    assert arguments[:3] == ["sweep", "--model", "llama-1b"]
    group = cli.make_context("hloscope", list(arguments))
    sweep = cli.get_command(group, "sweep")
    parsed = sweep.make_context("sweep", list(arguments[1:]), parent=group)  # as typed
    assert parsed.params["policies"] == "none,full,dots_with_no_batch_dims_saveable,save_named"
    readme = (REPO / "README.md").read_text()
    assert "python benchmarks/readme_timings.py" in readme
    assert "benchmarks/results/readme_timings.txt" in readme


def test_stated_timings_are_the_committed_medians() -> None:
    readme = (REPO / "README.md").read_text()
    stated = re.findall(r"([\d.]+) (min|s) (cold|cached)", readme)
    if not stated:
        return  # the README states no figure: nothing to match
    assert RESULTS.exists(), "the README states timings but their results file is absent"
    results = RESULTS.read_text()
    medians = {kind: float(m) for kind, m in re.findall(
        r"^main job, (cold|cached)(?: cache)?:.*?\n(?:  run.*\n)*  median: ([\d.]+) s", results,
        re.M)}
    for value, unit, kind in stated:
        seconds = float(value) * (60 if unit == "min" else 1)
        tolerance = 0.05 * 60 if unit == "min" else 0.05
        assert abs(seconds - medians[kind]) <= tolerance, (value, unit, kind, medians)


def test_the_stated_suite_time_is_the_committed_median() -> None:
    readme = (REPO / "README.md").read_text()
    stated = re.findall(r"its pytest part took\s+([\d.]+) s", readme)
    assert stated, "the README states how long its test command takes"
    median = re.search(r"^test suite .*\n(?:  run.*\n)*  median: ([\d.]+) s", RESULTS.read_text(),
                       re.M)
    assert median is not None
    assert all(abs(float(value) - float(median.group(1))) <= 0.05 for value in stated)
