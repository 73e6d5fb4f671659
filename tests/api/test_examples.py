"""The examples run as people run them (a fresh Python, JAX on the CPU) and say true things."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO

EXAMPLES = REPO / "examples"


CUDA_PLUGIN_IMPORT = re.compile(r"WARNING: All log messages before absl::InitializeLog\(\) is "
                                r"called are written to STDERR|I\d+ .* cudart_stub\.cc:\d+\] "
                                r"Could not find cuda drivers.*")
"""What the CUDA plugin's import writes before anything can silence it (only where the gpu
extra is installed, as in the test install; the README's `.[tpu]` install has no such line)."""


def run_example(name: str, out: Path | None, *args: str, cwd: Path = REPO) -> str:
    """The example's stdout, run as a user runs it: no JAX_PLATFORMS set (the example picks its
    own), the checkout's hloscope; its stderr must hold nothing but the CUDA plugin's import."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    paths = [] if out is None else [str(out)]
    done = subprocess.run([sys.executable, str(EXAMPLES / name), *paths, *args], env=env,
                          capture_output=True, text=True, timeout=900, cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    if name == "quickstart.py":
        noise = [line for line in done.stderr.splitlines()
                 if line.strip() and not CUDA_PLUGIN_IMPORT.fullmatch(line)]
        assert noise == [], "\n".join(noise[:20])
    return done.stdout


@pytest.mark.compile
def test_quickstart_writes_its_report(tmp_path: Path) -> None:
    """Run as docs/api.md runs it: no OUT_DIR, so the page goes to a new temporary folder (the
    printed path), never into the current folder."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    output = run_example("quickstart.py", None, cwd=cwd)
    written = Path(re.search(r"^wrote (.+)$", output, re.M).group(1))
    assert written.parent.parent == Path(tempfile.gettempdir()) and not any(cwd.iterdir())
    peaks = dict(re.findall(r"^\s*(\w+): live peak ([\d,]+) bytes", output, re.M))
    assert set(peaks) == {"none", "full"}
    html = written.read_text()
    shutil.rmtree(written.parent)
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
