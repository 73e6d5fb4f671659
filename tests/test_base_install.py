"""The base install (`pip install hloscope`, no extras) in a fresh virtual environment: every
command that needs no compiler works -- `inspect`, `memory --plot`, `report` -- and `build`
says which extra to install, with exit code 5 and no traceback.

The package is installed from a copy of its sources (not editable: what a user gets from an
sdist), with pip's own configuration (PyPI, or the local mirror `pip config list` shows). The
module takes ~31 s on the 2-core machine (most of it pip), under the ~60 s a default-suite test
may take; the same refusals, in the parent and in the compile children, are checked with jax
blocked by tests/cli/test_without_jax.py.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

from hloscope.errors import EXIT_MISSING_DEPENDENCY

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "fixtures" / "tpu-v5e-2x2"


@pytest.fixture(scope="module")
def base_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment holding hloscope without extras; its bin/ folder."""
    root = tmp_path_factory.mktemp("base-install")
    source = root / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):  # setup.py: the C accelerator
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "hloscope", source / "hloscope",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    venv.create(root / "venv", with_pip=True)
    bin_dir = root / "venv" / "bin"
    subprocess.run([bin_dir / "python", "-m", "pip", "install", "-q", str(source)],
                   env=_clean_env(), check=True, timeout=600)
    return bin_dir


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HLOSCOPE_DEBUG")}
    return {**env, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def _run(bin_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / "hloscope"), *args], cwd=cwd, env=_clean_env(),
                          capture_output=True, text=True, timeout=300, check=False)


def test_no_compiler_is_installed(base_install: Path) -> None:
    probe = subprocess.run([base_install / "python", "-c",
                            "import importlib.util as u; print(u.find_spec('jax'))"],
                           env=_clean_env(), capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == "None"


def test_reading_commands_work(base_install: Path, tmp_path: Path) -> None:
    none, full = FIXTURE / "remat-none", FIXTURE / "remat-full"
    inspected = _run(base_install, tmp_path, "inspect", str(none))
    assert inspected.returncode == 0, inspected.stderr
    assert "jit_train_step" in inspected.stdout
    for suffix, magic in ((".png", b"\x89PNG"), (".svg", b"<?xml")):
        plotted = _run(base_install, tmp_path, "memory", str(none), "--plot", f"t{suffix}")
        assert plotted.returncode == 0, plotted.stderr
        assert (tmp_path / f"t{suffix}").read_bytes().startswith(magic)
    reported = _run(base_install, tmp_path, "report", str(none), str(full), "-o", "r.html")
    assert reported.returncode == 0, reported.stderr
    page = (tmp_path / "r.html").read_text()
    assert page.count("<svg") >= 2 and "live peak" in page


@pytest.mark.parametrize(("target", "extra"), [("tpu:v5e:2x2", "tpu"), ("cpu", "jax")])
def test_build_names_the_extra(base_install: Path, tmp_path: Path, target: str,
                               extra: str) -> None:
    built = _run(base_install, tmp_path, "build", "--model", "tiny", "--target", target,
                 "-o", "b")
    assert built.returncode == EXIT_MISSING_DEPENDENCY, built.stderr
    assert f"pip install 'hloscope[{extra}]'" in built.stderr
    assert "Traceback" not in built.stderr + built.stdout
    assert not (tmp_path / "b").exists()
