"""Fault injection for tests and drills: a worker that SIGKILLs itself in the middle of a compile.

`HLOSCOPE_KILL_ATTEMPTS=N` (read by the sweep's driver) marks the first N attempts of every
compile; a marked task arms `kill_self_mid_compile` in its worker, which waits until the worker
has started its compile child (`python -m hloscope.workloads.compile_job`), lets it run for a
moment and then kills the worker with SIGKILL — a real, uncatchable death, as from the kernel's
OOM killer or a preempted node. The compile child goes with it (`compile_job` asks the kernel
for SIGKILL when its parent dies). `stop()` disarms the hook when the task ends first (a cache
hit compiles nothing), so a worker process that is reused stays safe.
"""
from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

KILL_ATTEMPTS_ENV = "HLOSCOPE_KILL_ATTEMPTS"
COMPILE_CHILD_MARK = b"hloscope.workloads.compile_job"
_POLL_SECONDS = 0.05
_GRACE_SECONDS = 0.5


def attempts_to_kill() -> int:
    try:
        return max(int(os.environ.get(KILL_ATTEMPTS_ENV, "0")), 0)
    except ValueError:
        return 0


def kill_self_mid_compile() -> threading.Event:
    """Arms the hook; setting the returned event disarms it."""
    stop = threading.Event()
    threading.Thread(target=_kill_when_compiling, args=(stop,), daemon=True,
                     name="hloscope-kill-hook").start()
    return stop


def _kill_when_compiling(stop: threading.Event) -> None:
    while not stop.wait(_POLL_SECONDS):
        if _has_compile_child(os.getpid()):
            if not stop.wait(_GRACE_SECONDS):
                os.kill(os.getpid(), signal.SIGKILL)
            return


def _has_compile_child(pid: int) -> bool:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            parent = int(stat[stat.rindex(")") + 2:].split()[1])
            if parent == pid and COMPILE_CHILD_MARK in (entry / "cmdline").read_bytes():
                return True
        except (OSError, ValueError):
            continue
    return False
