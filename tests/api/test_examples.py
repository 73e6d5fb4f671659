"""The examples run as people run them (a fresh Python, JAX on the CPU) and say true things."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO

EXAMPLES = REPO / "examples"


def run_example(name: str, out: Path, *args: str) -> str:
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, str(EXAMPLES / name), str(out), *args], env=env,
                          capture_output=True, text=True, timeout=900, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.compile
def test_quickstart_writes_its_report(tmp_path: Path) -> None:
    output = run_example("quickstart.py", tmp_path)
    peaks = dict(re.findall(r"^\s*(\w+): live peak ([\d,]+) bytes", output, re.M))
    assert set(peaks) == {"none", "full"}
    html = (tmp_path / "quickstart.html").read_text()
    shown = re.search(r'data-peak-bytes="(\d+)"', html).group(1)
    assert int(shown) == int(peaks["full"].replace(",", ""))  # the last module reported
    recomputed = dict(re.findall(r"^\s*(\w+):.* (\d+) recomputed instructions", output, re.M))
    assert recomputed["none"] == "0" and int(recomputed["full"]) > 0


def _walkthrough_checks(output: str, out: Path) -> None:
    manifest = json.loads((FIXTURES / "tpu-v5e-2x2-oom" / "manifest.json").read_text())
    assert manifest["status"] == "oom"  # libtpu's verdict: the walkthrough must agree
    assert "fits: False" in output
    assert re.search(r"fit; fastest: \w+", output)
    assert (out / "walkthrough.html").read_text().count('data-figure="timeline"') >= 2


@pytest.mark.compile
def test_walkthrough_on_the_cpu(tmp_path: Path) -> None:
    _walkthrough_checks(run_example("walkthrough.py", tmp_path), tmp_path)


@pytest.mark.slow
@pytest.mark.compile
def test_walkthrough_on_a_deviceless_tpu(tmp_path: Path) -> None:
    output = run_example("walkthrough.py", tmp_path, "--tpu")
    _walkthrough_checks(output, tmp_path)
    assert "2 of 2 fit" in output  # the tiny model fits a v5e under both policies
