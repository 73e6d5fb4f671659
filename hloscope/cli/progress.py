"""Long work is never silent: what `sweep`, `build` and `profile` print on standard error while
they compile.

First a start line -- what will be compiled, how many at once, and an estimate from the compile
times the build cache remembers (`workloads.estimate`) -- printed before any worker starts (so
before jax is imported anywhere). Then, on a terminal, one status line redrawn every second
with each running compile's elapsed time (and a sweep's bar); elsewhere (a pipe, a log file,
CI=true, TERM=dumb) plain lines only: one per finished compile and a "still compiling" line
every HEARTBEAT_SECONDS, so a CI log shows the job is alive without carriage-return clutter.
Last a summary line. `--quiet` prints none of it (results and errors still print);
`--verbose` also copies the compile children's output (libtpu's and CUDA's start-up chatter,
which otherwise goes only to the build's log) to the terminal.
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO

import click

from hloscope.sweeps.tasks import TaskOutcome
from hloscope.units import format_duration
from hloscope.workloads.runner import VERBOSE_ENV

BAR_WIDTH = 24
HEARTBEAT_SECONDS = 30.0
TICK_SECONDS = 1.0


@dataclass(frozen=True)
class ProgressSettings:
    quiet: bool = False
    verbose: bool = False


def progress_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--quiet and --verbose; passes `progress` (ProgressSettings)."""

    @functools.wraps(command)
    def collected(*args: Any, quiet: bool, verbose: bool, **kwargs: Any) -> Any:
        settings = ProgressSettings(quiet, verbose)
        with _verbose_children(verbose):
            return command(*args, progress=settings, **kwargs)

    collected = click.option("-v", "--verbose", is_flag=True,
                             help="Also show the compile processes' own output (libtpu's and "
                                  "CUDA's start-up messages; always in the build's log).")(
        collected)
    return click.option("-q", "--quiet", is_flag=True,
                        help="No start line, progress or summary on stderr.")(collected)


@contextlib.contextmanager
def _verbose_children(verbose: bool) -> Iterator[None]:
    """Sets VERBOSE_ENV for the compile children (worker processes inherit it) while a command
    runs, and puts the environment back after."""
    if not verbose:
        yield
        return
    previous = os.environ.get(VERBOSE_ENV)
    os.environ[VERBOSE_ENV] = "1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(VERBOSE_ENV, None)
        else:
            os.environ[VERBOSE_ENV] = previous


def live_display(stream: TextIO) -> bool:
    """Whether to redraw a status line: a terminal, not under CI, not TERM=dumb."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        return False
    return (tty and os.environ.get("CI", "").lower() not in ("true", "1")
            and os.environ.get("TERM") != "dumb")


class _Display:
    """A status line on a terminal, plain lines elsewhere; nothing at all when quiet."""

    def __init__(self, stream: TextIO | None, quiet: bool) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = not quiet and live_display(self.stream)
        self.last_output = time.monotonic()
        self.lock = threading.Lock()

    def line(self, text: str) -> None:
        if self.quiet:
            return
        with self.lock:
            self._clear()
            click.echo(text, file=self.stream)
            self.last_output = time.monotonic()
            self.stream.flush()

    def status(self, text: str) -> None:
        if self.tty:
            with self.lock:
                click.echo("\r\x1b[2K" + text[:_width()], file=self.stream, nl=False)
                self.stream.flush()

    def heartbeat_due(self) -> bool:
        return (not self.quiet and not self.tty
                and time.monotonic() - self.last_output >= HEARTBEAT_SECONDS)

    def _clear(self) -> None:
        if self.tty:
            click.echo("\r\x1b[2K", file=self.stream, nl=False)


def _width() -> int:
    import shutil

    return max(40, shutil.get_terminal_size((100, 24)).columns - 1)


class SweepProgress:
    """A SweepListener: counts finished cases out of `total` and shows what is compiling."""

    def __init__(self, total: int, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.total = total
        self.display = _Display(stream, quiet)
        self.stream = self.display.stream
        self.tty = self.display.tty
        self.variants_done = 0
        self.compiles = 0
        self.cached = 0
        self.started_at = time.monotonic()
        self.running: dict[str, tuple[int, float]] = {}

    def start(self, text: str) -> None:
        """The start line; the sweep's clock starts here."""
        self.started_at = time.monotonic()
        self.display.line(text)

    def started(self, case: str, batch: int, attempt: int) -> None:
        self.running[case] = (batch, time.monotonic())
        self._draw()

    def retrying(self, case: str, batch: int, attempt: int, reason: str) -> None:
        self.running.pop(case, None)
        self._line(f"{case} (batch {batch}): attempt {attempt} lost ({reason}); retrying")

    def finished(self, outcome: TaskOutcome, case_done: bool) -> None:
        self.running.pop(outcome.variant, None)
        self.compiles += not outcome.cache_hit
        self.cached += outcome.cache_hit
        self.variants_done += case_done
        self._line(_describe(outcome))

    def tick(self) -> None:
        if self.display.heartbeat_due() and self.running:
            self.display.line(f"  still compiling: {self._running_text()}")
        self._draw()

    def close(self) -> None:
        self.display._clear()

    def summary(self, wall_seconds: float | None = None) -> None:
        seconds = time.monotonic() - self.started_at if wall_seconds is None else wall_seconds
        self.display.line(f"done in {format_duration(seconds)}: {self.variants_done} of "
                          f"{self.total} variants, {self.compiles} compiled, {self.cached} "
                          "from the cache")

    def _line(self, text: str) -> None:
        self.display.line(f"  {text}")
        self._draw()

    def _running_text(self) -> str:
        now = time.monotonic()
        return ", ".join(f"{name}@{batch} ({format_duration(now - since)})"
                         for name, (batch, since) in self.running.items())

    def _draw(self) -> None:
        filled = BAR_WIDTH * self.variants_done // max(self.total, 1)
        running = self._running_text()
        elapsed = format_duration(time.monotonic() - self.started_at)
        self.display.status(
            f"[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {self.variants_done}/{self.total}"
            f" variants, {elapsed}" + (f" | compiling {running}" if running else ""))


class JobProgress:
    """One long job (a build, a profiling run): the start line, an elapsed-time status line
    redrawn every second on a terminal (a heartbeat line elsewhere), and the summary."""

    def __init__(self, what: str, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.what = what
        self.display = _Display(stream, quiet)
        self.started_at = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> JobProgress:
        self.started_at = time.monotonic()
        if not self.display.quiet:
            self._thread = threading.Thread(target=self._run, name="hloscope-progress",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.display._clear()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started_at

    def line(self, text: str) -> None:
        self.display.line(text)

    def _run(self) -> None:
        while not self._stop.wait(TICK_SECONDS):
            if self.display.heartbeat_due():
                self.display.line(f"  still {self.what} ({format_duration(self.elapsed)})")
            self.display.status(f"  {self.what}: {format_duration(self.elapsed)}")


def _describe(outcome: TaskOutcome) -> str:
    figures = outcome.figures
    fit = {True: "fits", False: "does not fit", None: "fit unknown"}[figures.fits]
    if outcome.cache_hit:
        source = "from the cache"
    elif figures.compile_seconds is None:
        source = "no compile"
    else:
        source = f"XLA compile {figures.compile_seconds:.1f}s"
    tries = f", attempt {outcome.attempts}" if outcome.attempts > 1 else ""
    return (f"{outcome.variant} (batch {outcome.batch}): {figures.status}, {fit}, {source}"
            f"{tries}, {outcome.seconds:.1f}s in all (worker start, compile, analysis)")


def sweep_start_line(request: Any) -> str:
    """What a sweep (a `sweeps.core.SweepRequest`) will compile, how many at once, the estimate."""
    from hloscope.sweeps.executors import LOCAL_SLOTS
    from hloscope.workloads.estimate import estimate_compiles

    cases = request.cases()
    target = request.parsed_target
    local = request.executor.kind == "local"
    jobs = request.jobs or (LOCAL_SLOTS if local else None)
    at_once = f"{jobs} at a time" if jobs else "as many at once as the cluster has CPUs"
    where = "local worker processes" if local else "Ray tasks"
    specs = [request.spec(case, case.point.batch) for case in cases]
    estimate = estimate_compiles(specs, request.cache_root, jobs or len(specs)).describe()
    what = (f"searching the largest batch that fits for {len(cases)} variant"
            f"{'s' if len(cases) != 1 else ''} (up to {request.max_probes} compiles each)"
            if request.search_batch else
            f"compiling {len(cases)} variant{'s' if len(cases) != 1 else ''}")
    first = "first round: " if request.search_batch else ""
    return (f"{what} of {request.model} for {target.spec} ({target.describe()}), {at_once} in "
            f"{where}; {first}{estimate}")


def build_start_line(spec: Any, cache_root: Any) -> str:
    """What `build` (a `workloads.build.BuildSpec`) will compile, and the estimate."""
    from hloscope.workloads.estimate import estimate_compiles

    target = spec.parsed_target
    estimate = estimate_compiles([spec], cache_root, 1).describe()
    return (f"building {spec.model} / {spec.variant} for {target.spec} ({target.describe()}) "
            f"in a compile process; {estimate}")
