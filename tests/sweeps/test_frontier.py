"""`--search frontier` on tiny / cpu with a --capacity (cpu has none): a live run of a few
1-2 s CPU compiles; the chosen row must be compiled and fit, with fewer compiles than
candidates. The per-tensor space is enumerated whole."""
from __future__ import annotations

import json

from click.testing import CliRunner

from hloscope.cli.main import cli
from hloscope.configs.presets import preset_config
from hloscope.sweeps.frontier import frontier_names, policy_space


def test_policy_space_is_every_choice_of_every_name():
    names = frontier_names(preset_config("tiny"))
    space = policy_space(names)
    assert len(space) == len(set(space)) == 3 ** len(names) == 3 ** 7


def test_frontier_on_cpu_compiles_few_and_chooses_a_compiled_fit(tmp_path):
    capacity = 30_000_000  # tiny at batch 8: `full` allocates 27.5 MB on XLA:CPU
    result = CliRunner().invoke(cli, [
        "sweep", "--model", "tiny", "--target", "cpu", "--seq", "64", "--batch", "8",
        "--search", "frontier", "--capacity", str(capacity), "-o", str(tmp_path / "f"),
        "--no-cache", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "f" / "frontier.json").read_text())
    assert data["candidates"] == 3 ** 7
    assert 1 <= data["compiles"] < data["candidates"]
    chosen = [row for row in data["rows"] if row["chosen"]]
    assert len(chosen) == 1 and chosen[0]["status"] == "compiled"
    assert chosen[0]["compiled_bytes"] <= capacity
    assert all(row["compiled_bytes"] is not None for row in data["rows"]
               if row["status"] == "compiled")
