"""Runs a sweep's batch plans on an executor (no jax).

Each case (a variant at a grid point) has a batch plan (`search.FixedBatch`, or
`search.BatchSearch` for `--search batch`) that asks for one compile at a time; up to `slots`
cases compile at once. A compile whose worker died, or whose compile process was killed
(status crash), is submitted again, up to `retries` more times; after that it is recorded as a
failed result carrying its log. While compiles run the listener is ticked about once a second
(the progress bar redraws its clocks). On any exception — Ctrl-C included — every running task
is killed before the exception goes on, so nothing is left compiling.
"""
from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from hloscope.sweeps.executor_base import Completion, Executor
from hloscope.sweeps.search import BatchSearch, FixedBatch
from hloscope.sweeps.tasks import (
    CompileTask,
    TaskOutcome,
    discard_attempt,
    lost_outcome,
    receive,
)

Plan = FixedBatch | BatchSearch
TICK_SECONDS = 1.0
DEFAULT_RETRIES = 2


class SweepListener(Protocol):
    def started(self, case: str, batch: int, attempt: int) -> None: ...

    def retrying(self, case: str, batch: int, attempt: int, reason: str) -> None: ...

    def finished(self, outcome: TaskOutcome, case_done: bool) -> None: ...

    def tick(self) -> None: ...


@dataclass
class _Attempt:
    case: str
    batch: int
    number: int
    task: CompileTask
    lost: tuple[str, ...] = ()  # why the earlier attempts were lost


@dataclass
class Scheduler:
    plans: dict[str, Plan]
    make_task: Callable[[str, int, int], CompileTask]  # (case, batch, attempt number)
    executor: Executor
    slots: int
    retries: int = DEFAULT_RETRIES
    listener: SweepListener | None = None
    retried: int = 0
    results: dict[str, list[TaskOutcome]] = field(default_factory=dict)
    _in_flight: dict[int, _Attempt] = field(default_factory=dict)
    _tickets: itertools.count = field(default_factory=itertools.count)

    def run(self) -> dict[str, list[TaskOutcome]]:
        self.results = {name: [] for name in self.plans}
        try:
            self._fill()
            while self._in_flight:
                completions = self.executor.wait(TICK_SECONDS)
                for completion in completions:
                    self._handle(completion)
                if not completions and self.listener is not None:
                    self.listener.tick()
                self._fill()
        except BaseException:
            self.executor.close(cancel=True)
            raise
        self.executor.close(cancel=False)
        return self.results

    def _fill(self) -> None:
        busy = {attempt.case for attempt in self._in_flight.values()}
        for name, plan in self.plans.items():
            if len(self._in_flight) >= self.slots:
                return
            batch = None if name in busy else plan.next_batch()
            if batch is not None:
                self._submit(name, batch, 1)

    def _submit(self, case: str, batch: int, number: int, lost: tuple[str, ...] = ()) -> None:
        ticket = next(self._tickets)
        task = self.make_task(case, batch, number)
        self.executor.submit(ticket, task)
        self._in_flight[ticket] = _Attempt(case, batch, number, task, lost)
        if self.listener is not None:
            self.listener.started(case, batch, number)

    def _handle(self, completion: Completion) -> None:
        attempt = self._in_flight.pop(completion.ticket)
        outcome, reason = completion.outcome, completion.lost
        if outcome is not None:
            try:
                outcome = receive(attempt.task, outcome)
            except OSError as error:  # a build that came back damaged
                outcome, reason = None, str(error)
        if outcome is not None and outcome.retryable:
            reason = (outcome.figures.error or "compile crashed").splitlines()[0]
        if reason is not None and attempt.number <= self.retries:
            self._retry(attempt, reason)
            return
        if outcome is None:
            outcome = lost_outcome(attempt.task, reason or "unknown", attempt.number)
        self._record(attempt, dataclasses.replace(outcome, attempts=attempt.number,
                                                  lost=attempt.lost))

    def _retry(self, attempt: _Attempt, reason: str) -> None:
        self.retried += 1
        discard_attempt(attempt.task)
        if self.listener is not None:
            self.listener.retrying(attempt.case, attempt.batch, attempt.number, reason)
        self._submit(attempt.case, attempt.batch, attempt.number + 1, (*attempt.lost, reason))

    def _record(self, attempt: _Attempt, outcome: TaskOutcome) -> None:
        plan = self.plans[attempt.case]
        plan.record(attempt.batch, outcome.figures.fits, outcome.figures.status)
        self.results[attempt.case].append(outcome)
        if self.listener is not None:
            self.listener.finished(outcome, plan.next_batch() is None)
