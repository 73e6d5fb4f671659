"""No input makes a command crash (exit 70): mutated real modules, baselines and manifests through
every command that reads them (click's CliRunner) and through the API. Every exit code is one the
docs (docs/commands.md) document, and a malformed-input error (exit 4) names file:line:col."""
from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import MUTATIONS, garble_json, mutate, seed_modules

import hloscope
from hloscope.cli.main import cli
from hloscope.errors import HloscopeError, ParseError

SEEDS = seed_modules()
DOCUMENTED_EXITS = {0, 1, 2, 3, 4}
COMMANDS = (["inspect"], ["flops"], ["remat"], ["memory"], ["snapshot"], ["oom", "--capacity",
                                                                             "1GiB"])
LOCATED = re.compile(r":\d+:\d+: error: ")
SETTINGS = settings(max_examples=15, deadline=20_000, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
FIXTURE_BUILD = Path(__file__).resolve().parents[2] / "fixtures" / "tpu-v5e-2x2-oom"


def _assert_documented(result, path: Path) -> None:  # noqa: ANN001  (click's Result)
    assert result.exit_code in DOCUMENTED_EXITS, result.output
    if result.exit_code == 4 and "not scheduled" not in result.output \
            and "snapshot" not in result.output:
        assert LOCATED.search(result.output), result.output


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), module=st.sampled_from(range(len(SEEDS))),
       kind=st.sampled_from(sorted(MUTATIONS)))
def test_mutated_module_through_every_command(seed: int, module: int, kind: str,
                                              tmp_path: Path) -> None:
    _, text = mutate(SEEDS[module][1], random.Random(seed), kind)
    path = tmp_path / "m.hlo"
    path.write_text(text)
    intact = tmp_path / "intact.hlo"
    intact.write_text(SEEDS[module][1])
    runner = CliRunner()
    for command in COMMANDS:
        _assert_documented(runner.invoke(cli, [command[0], str(path), *command[1:]]), path)
    baseline = tmp_path / "baseline.json"
    assert runner.invoke(cli, ["snapshot", str(intact), "-o", str(baseline), "--force"]).exit_code \
        == 0
    _assert_documented(runner.invoke(cli, ["check", str(path), "--baseline", str(baseline)]),
                       path)
    _assert_documented(runner.invoke(cli, ["compare", str(intact), str(path)]), path)
    _assert_documented(runner.invoke(cli, ["report", str(path), "-o",
                                           str(tmp_path / "r.html"), "--force"]), path)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), module=st.sampled_from(range(len(SEEDS))))
def test_mutated_module_through_the_api(seed: int, module: int) -> None:
    _, text = mutate(SEEDS[module][1], random.Random(seed))
    try:
        loaded = hloscope.load(text if "\n" in text else text + "\n")
    except ParseError as error:
        assert error.location.line >= 1 and error.location.column >= 1
        return
    except HloscopeError:
        return
    for analyse in (hloscope.inspect, hloscope.flops, hloscope.remat, hloscope.memory):
        try:
            analyse(loaded)
        except HloscopeError as error:
            assert error.exit_code in DOCUMENTED_EXITS


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_garbled_baseline(seed: int, tmp_path: Path) -> None:
    intact = tmp_path / "m.hlo"
    intact.write_text(SEEDS[0][1])
    baseline = tmp_path / "baseline.json"
    hloscope.snapshot(intact, output=baseline, force=True)
    baseline.write_text(garble_json(baseline.read_text(), random.Random(seed)))
    result = CliRunner().invoke(cli, ["check", str(intact), "--baseline", str(baseline)])
    assert result.exit_code in DOCUMENTED_EXITS, result.output
    if result.exit_code == 4:
        assert f"{baseline}:" in result.output


@pytest.mark.skipif(not FIXTURE_BUILD.is_dir(), reason="no build fixture")
@settings(SETTINGS, max_examples=5)
@given(seed=st.integers(0, 2**32 - 1))
def test_garbled_manifest(seed: int, tmp_path: Path) -> None:
    folder = tmp_path / "build"
    if not folder.exists():
        shutil.copytree(FIXTURE_BUILD, folder)
    manifest = folder / "manifest.json"
    intact = (FIXTURE_BUILD / "manifest.json").read_text()
    manifest.write_text(garble_json(intact, random.Random(seed)))
    runner = CliRunner()
    for command in (["inspect"], ["oom", "--capacity", "16GiB"]):
        result = runner.invoke(cli, [command[0], str(folder), *command[1:]])
        assert result.exit_code in DOCUMENTED_EXITS, (command, result.output)
