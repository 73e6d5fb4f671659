"""Compiles as Ray tasks: each declares its CPUs and memory so Ray packs them safely (no jax).

`ray` is imported here and nowhere else (`pip install 'hloscope[ray]'`). `connect` joins the
cluster at `--address` (`auto`: the running cluster on this machine; `ray://host:port`: Ray
Client; `host:port`: the cluster's GCS), starts a local one when no address is given (unless
this process is already connected), and checks that a host:port answers before handing it to
Ray, whose own connection attempts block for a long time. Ray's own retries are off
(`max_retries=0`): a task whose worker died comes back as lost and the sweep's scheduler retries
it, the same way for both executors. The workers must have hloscope installed and, for the
sweep folder and the cache, either share the driver's file system or send builds back packed.
"""
from __future__ import annotations

import contextlib
import socket
import sys
from typing import Any

from hloscope.devices import GIB
from hloscope.errors import ClusterUnreachableError, UsageError
from hloscope.optional import require
from hloscope.sweeps.executor_base import Completion, ExecutorSpec
from hloscope.sweeps.tasks import CompileTask, run_task

TASK_MEMORY_GIB = {"cpu": 1.0, "gpu": 2.0, "tpu": 3.0}  # a compile's resident size, measured
CPUS_PER_COMPILE = 1
_CONNECT_SECONDS = 5.0


def import_ray() -> Any:
    return require("ray", "ray", "--executor ray needs Ray")


class RayExecutor:
    name = "ray"

    def __init__(self, ray: Any, started: bool, memory_bytes: int) -> None:
        self._ray = ray
        self._started = started
        # Ray prints its notices (e.g. "A worker died") on stdout, which is the sweep's report
        self._notices_to_stderr = contextlib.redirect_stdout(sys.stderr)
        self._notices_to_stderr.__enter__()
        self._remote = ray.remote(run_task).options(
            num_cpus=CPUS_PER_COMPILE, memory=memory_bytes, max_retries=0,
            retry_exceptions=False)
        self._refs: dict[Any, int] = {}

    @classmethod
    def connect(cls, spec: ExecutorSpec, backend: str) -> RayExecutor:
        ray = import_ray()
        started = _connect(ray, spec.address)
        gib = spec.task_memory_gib or TASK_MEMORY_GIB.get(backend, 2.0)
        return cls(ray, started, int(gib * GIB))

    def default_slots(self) -> int:
        cpus = self._ray.cluster_resources().get("CPU", CPUS_PER_COMPILE)
        return max(int(cpus // CPUS_PER_COMPILE), 1)

    def submit(self, ticket: int, task: CompileTask) -> None:
        self._refs[self._remote.remote(task)] = ticket

    def wait(self, timeout: float) -> list[Completion]:
        refs = list(self._refs)
        if not refs:
            return []
        ready, _ = self._ray.wait(refs, num_returns=1, timeout=timeout)
        if ready:
            ready, _ = self._ray.wait(refs, num_returns=len(refs), timeout=0)
        return [self._collect(ref) for ref in ready]

    def _collect(self, ref: Any) -> Completion:
        ticket = self._refs.pop(ref)
        exceptions = self._ray.exceptions
        try:
            return Completion(ticket, self._ray.get(ref))
        except exceptions.RayTaskError as error:  # the task raised: raise it here
            cause = getattr(error, "cause", None)
            raise cause if isinstance(cause, Exception) else error from None
        except exceptions.RayError as error:  # the worker or its node died
            return Completion(ticket, None, f"{type(error).__name__}: {_first_line(error)}")

    def close(self, cancel: bool) -> None:
        if cancel:
            for ref in self._refs:
                self._ray.cancel(ref, force=True)
        self._refs.clear()
        if self._started:
            self._ray.shutdown()
        self._notices_to_stderr.__exit__(None, None, None)


def _connect(ray: Any, address: str | None) -> bool:
    """Connects; True when this call started the connection (and should end it)."""
    if ray.is_initialized():
        return False
    if address not in (None, "auto"):
        _check_reachable(address)
    options: dict[str, Any] = {"address": address, "log_to_driver": False}
    try:
        ray.init(**options, logging_level="ERROR")
    except (ConnectionError, TimeoutError) as error:
        raise ClusterUnreachableError(f"cannot reach the Ray cluster at {address}: "
                                      f"{_first_line(error)}") from None
    return True


def _check_reachable(address: str) -> None:
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"--address {address!r}: expected auto, host:port or ray://host:port")
    try:
        socket.create_connection((host, int(port)), timeout=_CONNECT_SECONDS).close()
    except OSError as error:
        raise ClusterUnreachableError(f"cannot reach the Ray cluster at {address}: "
                                      f"{error}") from None


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
