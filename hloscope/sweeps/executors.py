"""Where a sweep's compiles run: worker processes on this machine, or Ray tasks (no jax, no ray).

`open_executor` picks the executor `--executor` names: `local_executor.LocalExecutor`, or
`ray_executor.RayExecutor`, imported only when asked for (it is the one module that imports
ray). What they share -- the protocol, `ExecutorSpec` and `Completion` -- is in `executor_base`,
so neither executor imports this module.
"""
from __future__ import annotations

from hloscope.sweeps.executor_base import EXECUTORS, Completion, Executor, ExecutorSpec
from hloscope.sweeps.local_executor import LOCAL_SLOTS, LocalExecutor

__all__ = ["EXECUTORS", "LOCAL_SLOTS", "Completion", "Executor", "ExecutorSpec",
           "LocalExecutor", "open_executor"]


def open_executor(spec: ExecutorSpec, backend: str) -> Executor:
    if spec.kind == "ray":
        from hloscope.sweeps.ray_executor import RayExecutor

        return RayExecutor.connect(spec, backend)
    return LocalExecutor()
