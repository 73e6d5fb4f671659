"""The version is written once, in hloscope/version.py: the facade, CLI and pyproject read it."""
from __future__ import annotations

import tomllib
from pathlib import Path

from click.testing import CliRunner

import hloscope
from hloscope.cli.main import cli
from hloscope.version import __version__

REPO = Path(__file__).resolve().parent.parent


def test_the_facade_and_the_cli_show_the_leafs_version() -> None:
    assert hloscope.__version__ == __version__
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"hloscope {__version__}"


def test_pyproject_reads_the_version_from_the_leaf() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    dynamic = pyproject["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "hloscope.version.__version__"}
