"""Every command the README shows runs as shown (issue 38, item 1).

Truth: the README itself and the CLI's own parser. Each `hloscope ...` command of its bash
blocks, its console blocks (`$ hloscope ...`) and its inline code parses with the click app (an
unknown option, a bad choice or a missing input fails here). The console blocks run on the
committed fixtures: each runs for real, exits as the paragraph above it says (exit status 1 where
it says so, else 0), and every output line it shows (other than `...`) is a line of the real
output, in order. The main job's sample is a TPU compile of minutes: its lines must be lines of
the committed output of that run (benchmarks/results/readme_main_job.txt)."""
from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from hloscope.cli.main import cli

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
MAIN_JOB_OUTPUT = REPO / "benchmarks" / "results" / "readme_main_job.txt"
MAX_LINES = 200


@dataclass
class Shown:
    """One README command: its arguments (after `hloscope`), the output lines shown under it and
    the exit status the prose before its block states."""

    arguments: list[str]
    output: list[str] = field(default_factory=list)
    status: int = 0


def _blocks(language: str) -> list[tuple[str, str]]:
    """(prose before the block, block text) for each fenced block of `language`."""
    found = []
    for match in re.finditer(rf"```{language}\n(.*?)```", README, re.S):
        before = README[:match.start()].rstrip().rsplit("\n\n", 1)[-1]
        found.append((before, match.group(1)))
    return found


def _arguments(command: str) -> list[str]:
    return shlex.split(command.strip())[1:]


def console_commands() -> list[Shown]:
    """The `$ hloscope ...` lines of the console blocks with the output shown under each."""
    shown: list[Shown] = []
    for before, block in _blocks("console"):
        status = 1 if "exit status 1" in before else 0
        commands: list[Shown] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                commands.append(Shown(_arguments(line[2:])))
            elif commands:
                commands[-1].output.append(line)
        commands[-1].status = status
        shown += commands
    return shown


def bash_commands() -> list[list[str]]:
    commands = []
    for _, block in _blocks("bash"):
        joined = block.replace("\\\n", " ")
        commands += [_arguments(found.group(0)) for found in
                     re.finditer(r"\bhloscope [^\n&|;]+", joined)]
    return commands


def inline_commands() -> list[list[str]]:
    return [_arguments(found.group(1)) for found in re.finditer(r"`(hloscope [^`]+)`", README)]


def every_command() -> list[list[str]]:
    return bash_commands() + [c.arguments for c in console_commands()] + inline_commands()


def parse(arguments: list[str]) -> click.Context:
    """The click context of `hloscope ARGUMENTS`, as the CLI parses them (no callback runs)."""
    group = cli.make_context("hloscope", list(arguments), resilient_parsing=False)
    name = arguments[0]
    command = cli.get_command(group, name)
    assert command is not None, f"the README runs an unknown command: hloscope {name}"
    return command.make_context(name, list(arguments[1:]), parent=group)


def test_the_readme_is_short() -> None:
    assert len(README.splitlines()) <= MAX_LINES


def test_the_readme_shows_commands_of_each_kind() -> None:
    assert bash_commands()[0][:3] == ["sweep", "--model", "llama-1b"]
    assert len(console_commands()) >= 5
    assert ["sweep", "--model", "tiny", "--target", "cpu", "--policies",
            "none,full"] in inline_commands()


@pytest.mark.parametrize("arguments", every_command(), ids=" ".join)
def test_every_readme_command_parses(arguments: list[str], monkeypatch) -> None:
    monkeypatch.chdir(REPO)  # the README's paths are the repository's
    context = parse(arguments)
    assert context.command.name == arguments[0]


@pytest.fixture
def in_a_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh folder where the README's relative fixture paths resolve (files it writes land
    here, not in the repository)."""
    os.symlink(REPO / "fixtures", tmp_path / "fixtures")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COLUMNS", raising=False)
    return tmp_path


def test_console_commands_run_as_shown(in_a_checkout: Path) -> None:
    runner = CliRunner()
    for shown in console_commands():
        result = runner.invoke(cli, shown.arguments, catch_exceptions=False)
        name = shlex.join(shown.arguments)
        assert result.exit_code == shown.status, (name, result.output)
        _assert_lines_in_order(shown.output, result.output.splitlines(), name)


def test_the_main_jobs_sample_is_its_committed_output() -> None:
    sample = next(block for before, block in _blocks("text")
                  if block.startswith("Sweep: llama-1b"))
    _assert_lines_in_order(sample.splitlines(), MAIN_JOB_OUTPUT.read_text().splitlines(),
                           "the main job")


def _assert_lines_in_order(shown: list[str], real: list[str], name: str) -> None:
    """Each shown line (but `...`) is a line of `real`, in the same order."""
    position = 0
    for line in shown:
        if line.strip() == "...":
            continue
        try:
            position = real.index(line, position) + 1
        except ValueError:
            pytest.fail(f"{name}: the README shows a line its output lacks (or out of order):\n"
                        f"{line}\n--- real output ---\n" + "\n".join(real))
