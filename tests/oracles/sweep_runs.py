"""Helpers for tests that run `hloscope sweep` on tiny CPU compiles and inspect what is left on
disk and in the process table."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from hloscope.cli.main import cli

TINY_CPU = ("--model", "tiny", "--target", "cpu")


def run_sweep_cli(tmp_path: Path, name: str, *args: str) -> tuple[int, dict]:
    """Runs a tiny CPU sweep writing into tmp_path/name; (exit code, its sweep.json)."""
    result = CliRunner().invoke(cli, ["sweep", *TINY_CPU, "-o", str(tmp_path / name), *args],
                                catch_exceptions=False)
    document = json.loads((tmp_path / name / "sweep.json").read_text())
    return result.exit_code, document


def rows_by_name(document: dict) -> dict[str, dict]:
    return {row["variant"]: row for row in document["variants"]}


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line contains `text` (zombies excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if text.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def cache_entries(cache: Path) -> int:
    builds = cache / "builds"
    return len(list(builds.iterdir())) if builds.exists() else 0
