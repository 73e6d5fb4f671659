"""A sweep's progress on standard error: a bar redrawn every second on a terminal (the running
compiles' clocks tick), one line per compile otherwise (logs and CI stay readable)."""
from __future__ import annotations

import sys
import time
from typing import TextIO

import click

from hloscope.sweeps.core import TaskOutcome

BAR_WIDTH = 24


class SweepProgress:
    """A SweepListener: counts finished cases out of `total` and shows what is compiling."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.variants_done = 0
        self.compiles = 0
        self.running: dict[str, tuple[int, float]] = {}

    def started(self, case: str, batch: int, attempt: int) -> None:
        self.running[case] = (batch, time.monotonic())
        self._draw()

    def retrying(self, case: str, batch: int, attempt: int, reason: str) -> None:
        self.running.pop(case, None)
        self._line(f"{case} (batch {batch}): attempt {attempt} lost ({reason}); retrying")

    def finished(self, outcome: TaskOutcome, case_done: bool) -> None:
        self.running.pop(outcome.variant, None)
        self.compiles += 1
        self.variants_done += case_done
        self._line(_describe(outcome))

    def tick(self) -> None:
        self._draw()

    def close(self) -> None:
        self._clear()

    def _line(self, text: str) -> None:
        self._clear()
        click.echo(f"  {text}", file=self.stream)
        self._draw()

    def _draw(self) -> None:
        if not self.tty:
            return
        filled = BAR_WIDTH * self.variants_done // max(self.total, 1)
        now = time.monotonic()
        running = ", ".join(f"{name}@{batch} ({now - since:.0f}s)"
                            for name, (batch, since) in self.running.items())
        line = (f"[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {self.variants_done}/{self.total}"
                f" variants, {self.compiles} compiles" + (f" | {running}" if running else ""))
        click.echo("\r\x1b[2K" + line[:200], file=self.stream, nl=False)

    def _clear(self) -> None:
        if self.tty:
            click.echo("\r\x1b[2K", file=self.stream, nl=False)


def _describe(outcome: TaskOutcome) -> str:
    figures = outcome.figures
    fit = {True: "fits", False: "does not fit", None: "fit unknown"}[figures.fits]
    source = "cached" if outcome.cache_hit else (
        "no compile" if figures.compile_seconds is None else
        f"compiled in {figures.compile_seconds:.1f}s")
    tries = f", attempt {outcome.attempts}" if outcome.attempts > 1 else ""
    return (f"{outcome.variant} (batch {outcome.batch}): {figures.status}, {fit}, {source}"
            f"{tries} [{outcome.seconds:.1f}s]")
