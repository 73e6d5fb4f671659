"""Run one compile in a child process and always come back with a CompileResult (no jax here).

Every compile gets a fresh `python -m hloscope.workloads.compile_job` process with the target's
environment (`targets.target_environment`): libtpu can SIGSEGV, and the TPU and CUDA plugins
initialise each other inside one process. A child that dies or hangs becomes a "crash" or
"timeout" result carrying the tail of its log, so a sweep survives it; a child without jax (or
the target's plugin) raises MissingDependencyError here (`missing`). Run compiles one at a time:
a TPU compile takes ~1.8 GB and 10-60 s.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from hloscope.configs.flags import CompileFlags
from hloscope.configs.targets import parse_target, target_environment
from hloscope.formats.compile_record import CompileResult
from hloscope.workloads.compile_job import PARENT_PID_ENV
from hloscope.workloads.missing import raise_if_missing

TRANSFORMER_BUILDER = "hloscope.workloads.transformer:build_train_step"
VERBOSE_ENV = "HLOSCOPE_VERBOSE"
"""Set (by `--verbose`): a child's output also goes to this process's stderr, not only its log."""
LOG_TAIL_LINES = 40
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the directory holding `hloscope/`


@dataclass(frozen=True)
class CompileRequest:
    """The child compiles `builder(mesh, **builder_kwargs)` for `target` into `dump_dir`."""

    target: str
    dump_dir: str
    builder: str = TRANSFORMER_BUILDER
    builder_kwargs: dict[str, Any] = field(default_factory=dict)
    compiler_options: dict[str, Any] = field(default_factory=dict)
    flags: dict[str, Any] = field(default_factory=dict)  # spec.flags.CompileFlags.to_dict()


def compile_in_subprocess(request: CompileRequest, *, timeout: float = 1200.0,
                          log_path: str | Path | None = None) -> CompileResult:
    """Compiles in a fresh child process; a crash or timeout is a result, never an exception."""
    target = parse_target(request.target)  # a bad target is the caller's error: UsageError
    Path(request.dump_dir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hloscope-compile-") as scratch:
        request_path, result_path = handshake_files(Path(scratch))
        log = Path(log_path) if log_path else Path(scratch) / "child.log"
        request_path.write_text(json.dumps(asdict(request)))
        command = [sys.executable, "-m", "hloscope.workloads.compile_job", str(request_path),
                   str(result_path)]
        env = CompileFlags.from_dict(request.flags).apply(child_environment(target),
                                                          target.backend)
        returncode = run_child(command, env, log, timeout)
        raise_if_missing(returncode, result_path)
        if returncode == 0 and result_path.exists():
            data = json.loads(result_path.read_text())
            return CompileResult.from_dict({**data, "returncode": 0})
        return _failure(request, returncode, log)


def handshake_files(scratch: Path) -> tuple[Path, Path]:
    """Where a child process reads its request and writes its result (JSON files)."""
    return scratch / "request.json", scratch / "result.json"


def child_environment(target: Any) -> dict[str, str]:
    env = target_environment(target, os.environ)
    paths = [str(_PACKAGE_ROOT), *filter(None, [env.get("PYTHONPATH")])]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env[PARENT_PID_ENV] = str(os.getpid())
    if target.backend == "tpu":  # libtpu's INFO lines (its rematerialization) into compile.log
        env.setdefault("TPU_STDERR_LOG_LEVEL", "0")
    return env


def run_child(command: list[str], env: dict[str, str], log: Path, timeout: float) -> int | None:
    """The child's return code (negative: killed by that signal); None when it timed out.

    Its stdout and stderr (libtpu's and CUDA's start-up messages among them) go to `log`, and
    with $HLOSCOPE_VERBOSE set to this process's stderr as well."""
    with log.open("wb") as output:
        if os.environ.get(VERBOSE_ENV):
            return _run_teed(command, env, output, timeout)
        try:
            completed = subprocess.run(command, env=env, stdout=output, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:  # subprocess.run has killed the child
            return None
    return completed.returncode


def _run_teed(command: list[str], env: dict[str, str], output: BinaryIO,
              timeout: float) -> int | None:
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    timed_out = threading.Event()

    def kill() -> None:
        timed_out.set()
        process.kill()

    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        stdout = process.stdout
        assert stdout is not None
        for chunk in iter(lambda: stdout.read1(1 << 16), b""):  # type: ignore[attr-defined]
            output.write(chunk)
            sys.stderr.buffer.write(chunk)
            sys.stderr.flush()
        code = process.wait()
    finally:
        timer.cancel()
    return None if timed_out.is_set() else code


def _failure(request: CompileRequest, returncode: int | None, log: Path) -> CompileResult:
    if returncode is None:
        status, error = "timeout", "the compile did not finish in time; the child was killed"
    elif returncode < 0:
        status, error = "crash", f"the compile process died with {_signal_name(-returncode)}"
    else:
        status, error = "crash", f"the compile process exited with status {returncode}"
    return CompileResult(target=parse_target(request.target).spec, status=status,
                         dump_dir=request.dump_dir, error=error, log_tail=tail_of_log(log),
                         returncode=returncode)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def tail_of_log(log: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
