"""CI runs the README's test command, in a virtual environment of its own (issue 38, item 7).

Truth: the README and pyproject.toml. `.ci/run`'s last line is the README's test command, word
for word, and it runs after a `python -m venv` into a new folder and that folder's activation,
so CI installs into nothing earlier runs left. The test and lint tools of the `dev` extra have
upper bounds, so a new release reaches CI only when the bound is raised on purpose."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parent.parent
CI = (REPO / ".ci" / "run").read_text()
TOOLS = ("pytest", "pytest-timeout", "ruff", "mypy", "hypothesis")


def readme_test_command() -> str:
    """The one-line bash block the README's test paragraph shows (`pip install ... pytest`)."""
    readme = (REPO / "README.md").read_text()
    found = [block.strip() for block in re.findall(r"```bash\n(.*?)```", readme, re.S)
             if block.startswith("pip install") and "pytest" in block]
    assert len(found) == 1, f"the README shows {len(found)} test commands, not one"
    assert "\n" not in found[0], "the README's test command is one line"
    return found[0]


def ci_lines() -> list[str]:
    return [line for line in CI.splitlines() if line.strip() and not line.startswith("#")]


def test_ci_runs_the_readme_test_command_last() -> None:
    assert ci_lines()[-1] == readme_test_command()


def test_the_readme_test_command_lints_and_type_checks_before_the_tests() -> None:
    steps = [step.strip() for step in readme_test_command().split("&&")]
    assert steps[0].startswith("pip install -e '.[dev,")
    assert steps[1:] == ["ruff check", "mypy", "python -m pytest -q"]


def test_ci_installs_into_a_new_virtual_environment() -> None:
    lines = ci_lines()
    venv = next(i for i, line in enumerate(lines) if "-m venv" in line)
    activate = next(i for i, line in enumerate(lines) if line.startswith("source ")
                    and "/bin/activate" in line)
    assert venv < activate < len(lines) - 1
    made = re.search(r'-m venv "\$(\w+)"', lines[venv])
    assert made is not None, "the environment goes into a folder named by a variable"
    assert any(re.match(rf'{made.group(1)}="\$\(mktemp -d', line) for line in lines), \
        "the folder is new for every run"


def test_the_dev_tools_have_upper_bounds() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    dev = {Requirement(line).name: Requirement(line) for line in
           extras["optional-dependencies"]["dev"]}
    for tool in TOOLS:
        bounds = {spec.operator for spec in dev[tool].specifier}
        assert bounds & {"<", "<=", "==", "~="}, f"{tool} has no upper bound in the dev extra"
