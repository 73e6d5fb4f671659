"""What every executor shares: the protocol, what it is asked for and what it hands back.

An executor takes `CompileTask`s under tickets and hands back `Completion`s: the task's outcome,
or -- when its worker died (SIGKILL, OOM killer, a lost node) -- the reason, so the scheduler can
retry it. An exception raised by the task itself is raised again by `wait`. `close(cancel=True)`
kills whatever still runs (the compile children die with their workers).

Both executors (`local_executor`, `ray_executor`) and the scheduler import this module and nothing
of each other; `executors.open_executor` picks one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from hloscope.sweeps.tasks import CompileTask, TaskOutcome

EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class ExecutorSpec:
    """What `--executor`, `--address` and `--task-memory` asked for."""

    kind: str = "local"
    address: str | None = None
    task_memory_gib: float | None = None  # Ray: memory declared per compile


@dataclass(frozen=True)
class Completion:
    ticket: int
    outcome: TaskOutcome | None  # None: the worker died
    lost: str | None = None  # why, when it died


class Executor(Protocol):
    """Runs tasks under the scheduler's tickets; `default_slots` is how many at once by default."""

    name: str

    def default_slots(self) -> int: ...

    def submit(self, ticket: int, task: CompileTask) -> None: ...

    def wait(self, timeout: float) -> list[Completion]: ...

    def close(self, cancel: bool) -> None: ...
