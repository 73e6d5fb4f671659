"""Commands that compile, on an install without jax: the extra to install and exit code 5, no
traceback -- whether the parent finds jax missing, or only the compile or profile child does.

The parent's check is exercised in process (jax blocked in sys.modules); the children's with a
stand-in `jax` package on PYTHONPATH whose import fails as a missing module does, so the parent's
look-up finds it and only the import in the child fails (a Ray worker without jax, say).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hloscope.cli.main import cli
from hloscope.errors import EXIT_MISSING_DEPENDENCY

REPO = Path(__file__).resolve().parents[2]
FAILING_JAX = 'raise ModuleNotFoundError("No module named \'jax\'", name="jax")\n'


@pytest.mark.parametrize(("args", "extra"), [
    (["build", "--model", "tiny", "--target", "tpu:v5e:2x2", "-o", "{tmp}/b"], "tpu"),
    (["build", "--model", "tiny", "--target", "cpu", "-o", "{tmp}/b"], "jax"),
    (["sweep", "--model", "tiny", "--target", "cpu", "--policies", "none", "-o", "{tmp}/s"],
     "jax"),
    (["profile", "--model", "tiny", "-o", "{tmp}/p"], "jax"),
])
def test_the_parent_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                    args: list[str], extra: str) -> None:
    monkeypatch.setitem(sys.modules, "jax", None)  # as if not installed
    result = CliRunner().invoke(cli, [a.format(tmp=tmp_path) for a in args])
    assert result.exit_code == EXIT_MISSING_DEPENDENCY, result.output
    assert f"pip install 'hloscope[{extra}]'" in result.output
    assert "needs jax" in result.output and "Traceback" not in result.output
    assert not any(tmp_path.iterdir())  # refused before anything was written


def _without_jax(tmp_path: Path) -> dict[str, str]:
    blocker = tmp_path / "blocker"
    (blocker / "jax").mkdir(parents=True)
    (blocker / "jax" / "__init__.py").write_text(FAILING_JAX)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(blocker)])}
    env.pop("HLOSCOPE_DEBUG", None)
    return env


@pytest.mark.parametrize("args", [
    ["build", "--model", "tiny", "--target", "cpu", "--no-cache", "-o", "{tmp}/b"],
    ["sweep", "--model", "tiny", "--target", "cpu", "--policies", "none,full", "--no-cache",
     "-o", "{tmp}/s"],
    ["profile", "--model", "tiny", "-o", "{tmp}/p"],
], ids=["build", "sweep", "profile"])
def test_a_child_without_jax_gives_the_same_error(tmp_path: Path, args: list[str]) -> None:
    command = [sys.executable, "-m", "hloscope", *(a.format(tmp=tmp_path) for a in args)]
    done = subprocess.run(command, env=_without_jax(tmp_path), capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == EXIT_MISSING_DEPENDENCY, done.stderr
    assert "needs jax" in done.stderr and "pip install 'hloscope[jax]'" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert "compile error" not in done.stderr + done.stdout
