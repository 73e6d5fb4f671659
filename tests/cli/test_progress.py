"""`hloscope sweep` is never silent: the start line comes before jax is imported anywhere, a
terminal sees the running compile's clock tick while it compiles, and a pipe or CI=true gets
plain lines only.

When jax is first imported is recorded by a `sitecustomize` on PYTHONPATH (every process of the
sweep -- the driver, its workers, their compile children -- inherits it) that logs the time and
process id of the first look-up of `jax`; the terminal is a real pseudo-terminal (`pty`), read
with the arrival time of each chunk.
"""
from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hloscope.units import format_duration

REPO = Path(__file__).resolve().parents[2]
SITECUSTOMIZE = '''
import importlib.util, os, sys, time

class _JaxImportLog:
    """Logs when jax's own code first runs (a look-up alone, find_spec, is no import)."""

    def find_spec(self, name, path=None, target=None):
        if name != "jax":
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            with open(os.environ["HLOSCOPE_TEST_JAX_LOG"], "a") as log:
                log.write(f"{time.time()} {os.getpid()}\\n")
            return run(module)

        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, _JaxImportLog())
'''
STATUS = re.compile(rb"\r\x1b\[2K\[[#-]+\] 0/1 variants, \d+s \| compiling none@8 \((\d+)s\)")


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("progress")
    (root / "site").mkdir()
    (root / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return root


def _env(root: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "HLOSCOPE_VERBOSE")}
    paths = [str(REPO), str(root / "site"), *filter(None, [env.get("PYTHONPATH")])]
    return {**env, "PYTHONPATH": os.pathsep.join(paths), "TERM": "xterm",
            "HLOSCOPE_TEST_JAX_LOG": str(root / "jax.log"), **extra}


def _sweep(root: Path, out: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "hloscope", "sweep", "--model", "tiny", "--target", "cpu",
            "--policies", "none", "--cache-dir", str(root / "cache"), "-o", str(root / out),
            *extra]


def _under_pty(command: list[str], env: dict[str, str]) -> tuple[list[tuple[float, bytes]], int]:
    """The chunks the command wrote to its terminal, each with its arrival time."""
    master, slave = pty.openpty()
    process = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, env=env,
                               cwd=REPO)
    os.close(slave)
    chunks: list[tuple[float, bytes]] = []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if not ready:
            if process.poll() is not None:
                break
            continue
        try:
            data = os.read(master, 65536)
        except OSError:  # the terminal closed: the command has exited
            break
        if not data:
            break
        chunks.append((time.time(), data))
    os.close(master)
    return chunks, process.wait(timeout=60)


def _first_at(chunks: list[tuple[float, bytes]], pattern: bytes) -> float:
    seen = b""
    for at, data in chunks:
        seen += data
        if re.search(pattern, seen):
            return at
    raise AssertionError(f"{pattern!r} never arrived in {seen!r}")


@pytest.mark.compile
def test_a_terminal_sees_the_start_line_first_and_the_compile_tick(sandbox: Path) -> None:
    (sandbox / "jax.log").unlink(missing_ok=True)
    chunks, code = _under_pty(_sweep(sandbox, "tty"), _env(sandbox))
    assert code == 0, b"".join(c for _, c in chunks)
    started = _first_at(chunks, rb"compiling 1 variant of tiny for cpu .* 2 at a time")
    imports = [line.split() for line in (sandbox / "jax.log").read_text().splitlines()]
    assert imports, "no process imported jax"
    first_import = min(float(at) for at, _ in imports)
    assert started < first_import  # printed before any process imported jax
    finished = _first_at(chunks, rb"none \(batch 8\): ok")
    ticks = [(at, int(m.group(1))) for at, data in chunks for m in STATUS.finditer(data)]
    running = [(at, seconds) for at, seconds in ticks if first_import <= at < finished]
    assert running, "no status line while the compile ran"
    assert max(seconds for _, seconds in ticks) >= 1  # the clock ticks
    assert _first_at(chunks, rb"done in \d+s: 1 of 1 variants, 1 compiled") >= finished
    assert len({pid for _, pid in imports}) == len(imports) == 1  # the compile child alone


def test_plain_lines_without_a_terminal(sandbox: Path) -> None:
    done = subprocess.run(_sweep(sandbox, "plain"), env=_env(sandbox), capture_output=True,
                          cwd=REPO, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.decode().splitlines()
    assert lines[0].startswith("compiling 1 variant of tiny for cpu")
    assert any(line.startswith("  none (batch 8): ok") for line in lines)
    assert lines[-1].startswith("done in ")
    assert b"\r" not in done.stderr and b"\x1b" not in done.stderr


def test_ci_gets_plain_lines_on_a_terminal(sandbox: Path) -> None:
    chunks, code = _under_pty(_sweep(sandbox, "ci"), _env(sandbox, CI="true"))
    text = b"".join(data for _, data in chunks)
    assert code == 0, text
    assert b"compiling 1 variant of tiny" in text and b"\x1b[2K" not in text


def test_quiet_prints_no_progress(sandbox: Path) -> None:
    done = subprocess.run(_sweep(sandbox, "quiet", "--quiet"), env=_env(sandbox),
                          capture_output=True, cwd=REPO, timeout=300, check=False)
    assert done.returncode == 0 and done.stderr == b""
    assert b"Sweep: tiny on cpu" in done.stdout


@pytest.mark.parametrize(("seconds", "text"), [(0.4, "0s"), (59.4, "59s"), (61, "1m01s"),
                                                (3725, "1h02m")])
def test_durations(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_build_prints_a_start_line_and_a_summary(sandbox: Path) -> None:
    command = [sys.executable, "-m", "hloscope", "build", "--model", "tiny", "--target", "cpu",
               "--cache-dir", str(sandbox / "cache"), "-o", str(sandbox / "build")]
    done = subprocess.run(command, env=_env(sandbox), capture_output=True, cwd=REPO,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.decode().splitlines()
    assert lines[0].startswith("building tiny / none for cpu")
    assert re.fullmatch(r"done in \d+s: ok, (compiled|from the cache)", lines[-1])


@pytest.mark.parametrize("verbose", [False, True])
def test_a_childs_output_reaches_the_terminal_only_when_verbose(
        tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        verbose: bool) -> None:
    from hloscope.workloads.runner import VERBOSE_ENV, run_child

    if verbose:
        monkeypatch.setenv(VERBOSE_ENV, "1")
    else:
        monkeypatch.delenv(VERBOSE_ENV, raising=False)
    noise = "W0000 external/xla/pjrt: Unable to initialize backend 'cuda'"
    command = [sys.executable, "-c", f"import sys; print({noise!r}, file=sys.stderr)"]
    log = tmp_path / "build.log"
    assert run_child(command, dict(os.environ), log, timeout=60) == 0
    assert noise in log.read_text()
    assert (noise in capfd.readouterr().err) == verbose
