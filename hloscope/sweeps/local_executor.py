"""Compiles in worker processes on this machine (no jax, no ray).

`LocalExecutor` starts one fresh `spawn` process per task (a fresh interpreter each time, like a
pool with one task per child, so libtpu's memory goes back to the system), and each death is
that task's alone: it comes back as a lost `Completion`, the scheduler retries it.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

from hloscope.sweeps.executor_base import Completion
from hloscope.sweeps.tasks import CompileTask, run_task

LOCAL_SLOTS = 2  # compiles at once by default (--jobs): each takes a core and, for TPU, ~2 GB


@dataclass
class _Job:
    process: BaseProcess
    reader: Connection


class LocalExecutor:
    name = "local"

    def __init__(self) -> None:
        self._context = multiprocessing.get_context("spawn")
        self._jobs: dict[int, _Job] = {}

    def default_slots(self) -> int:
        return LOCAL_SLOTS

    def submit(self, ticket: int, task: CompileTask) -> None:
        reader, writer = self._context.Pipe(duplex=False)
        process = self._context.Process(target=_serve, args=(task, writer),
                                        name=f"hloscope-worker-{ticket}")
        with _sigint_ignored():  # inherited: a Ctrl-C is the driver's alone to handle
            process.start()
        writer.close()
        self._jobs[ticket] = _Job(process, reader)

    def wait(self, timeout: float) -> list[Completion]:
        owners: dict[Any, int] = {}
        for ticket, job in self._jobs.items():
            owners[job.reader] = owners[job.process.sentinel] = ticket
        ready = wait(list(owners), timeout)
        return [self._collect(ticket) for ticket in sorted({owners[item] for item in ready})]

    def _collect(self, ticket: int) -> Completion:
        job = self._jobs.pop(ticket)
        try:
            kind, payload = job.reader.recv()
        except (EOFError, OSError):
            kind, payload = "lost", None
        job.reader.close()
        job.process.join()
        if kind == "ok":
            return Completion(ticket, payload)
        if kind == "error":
            raise payload
        return Completion(ticket, None, f"worker process died: {_exit_text(job.process)}")

    def close(self, cancel: bool) -> None:
        for job in self._jobs.values():
            if cancel:
                job.process.kill()
            job.process.join()
            job.reader.close()
        self._jobs.clear()


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _serve(task: CompileTask, writer: Connection) -> None:
    """A worker process (SIGINT ignored: on Ctrl-C the driver kills the workers)."""
    try:
        message: tuple[str, Any] = ("ok", run_task(task))
    except Exception as error:  # raised again in the driver
        message = ("error", error)
    try:
        writer.send(message)
    except Exception as error:  # the exception itself does not pickle
        writer.send(("error", RuntimeError(f"{type(error).__name__}: {error}")))
    writer.close()


def _exit_text(process: BaseProcess) -> str:
    code = process.exitcode
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"
