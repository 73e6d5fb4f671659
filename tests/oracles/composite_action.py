"""Runs a composite GitHub Action's steps as the runner does, on this machine.

What GitHub documents for composite actions (docs.github.com, "Metadata syntax for GitHub
Actions" and "Workflow commands"): each step's `env` is evaluated, then its `run` script runs
with `shell: bash` as `bash --noprofile --norc -eo pipefail {0}`; `$GITHUB_OUTPUT` is a file of
`name=value` lines that becomes `steps.<id>.outputs`; `$GITHUB_STEP_SUMMARY` a Markdown file.
Only the expressions an action here uses are known: `inputs.*` (defaults from `inputs:`),
`github.action_path`, `runner.temp` and `steps.<id>.outputs.*`; any other is an error, so a
step cannot silently run with an empty value.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

_EXPRESSION = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")
BASH = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]


@dataclass
class StepRun:
    name: str
    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class ActionRun:
    steps: list[StepRun]
    summary: str

    @property
    def returncode(self) -> int:
        return self.steps[-1].returncode

    def outputs(self, step_id: str) -> dict[str, str]:
        return self._by_id[step_id].outputs

    _by_id: dict[str, StepRun] = field(default_factory=dict)


def run_action(action: Path, inputs: dict[str, str], workdir: Path,
               env: dict[str, str]) -> ActionRun:
    spec = yaml.safe_load(action.read_text())
    assert spec["runs"]["using"] == "composite"
    given = {name: str(inputs.get(name, item.get("default", "")))
             for name, item in spec.get("inputs", {}).items()}
    missing = [n for n, item in spec["inputs"].items() if item.get("required") and not given[n]]
    assert not missing, f"required inputs missing: {missing}"
    temp = workdir / "runner-temp"
    temp.mkdir(exist_ok=True)
    summary = workdir / "step-summary.md"
    context = {"github.action_path": str(action.parent), "runner.temp": str(temp)}
    context.update({f"inputs.{name}": value for name, value in given.items()})
    run = ActionRun([], "")
    for number, step in enumerate(spec["runs"]["steps"]):
        assert step.get("shell") == "bash", "only bash steps are run here"
        output = workdir / f"output-{number}"
        output.write_text("")
        step_env = {key: _evaluate(str(value), context) for key, value in
                    (step.get("env") or {}).items()}
        done = subprocess.run([*BASH, "-c", step["run"]], cwd=workdir, text=True,
                              capture_output=True,
                              env={**env, **step_env, "GITHUB_OUTPUT": str(output),
                                   "GITHUB_STEP_SUMMARY": str(summary),
                                   "RUNNER_TEMP": str(temp)})
        outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if line)
        result = StepRun(step.get("name", ""), done.returncode, done.stdout, done.stderr,
                         outputs)
        run.steps.append(result)
        if "id" in step:
            run._by_id[step["id"]] = result
            context.update({f"steps.{step['id']}.outputs.{k}": v for k, v in outputs.items()})
        if done.returncode != 0:
            break
    run.summary = summary.read_text() if summary.exists() else ""
    return run


def _evaluate(text: str, context: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in context and not name.startswith("steps."):
            raise KeyError(f"expression not known to this runner: {name}")
        return context.get(name, "")
    return _EXPRESSION.sub(value, text)


def hloscope_on_path(folder: Path, repo: Path) -> dict[str, str]:
    """An environment whose `hloscope` runs this checkout (as an installed console script)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "hloscope"
    script.write_text(f'#!/bin/sh\nPYTHONPATH="{repo}${{PYTHONPATH:+:$PYTHONPATH}}" '
                      f'exec "{sys.executable}" -m hloscope "$@"\n')
    script.chmod(0o755)
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
