"""One compile as a task a worker runs, and what comes back (no jax).

`run_task` is what a worker — a local spawned process or a Ray task — executes: build through
the cache (or into the sweep folder without it), load the build (`loader.build.load_build`),
analyse it (`analyses.summary.variant.variant_figures`) and return a `TaskOutcome`. When the
worker cannot see the driver's file system (its probe file is absent) the build folder travels
back packed (`transfer`) and `receive` unpacks it. When a worker dies, `lost_outcome` writes the
failure as a build folder carrying the attempt's log.
"""
from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from hloscope.analyses.summary.variant import VariantFigures, variant_figures
from hloscope.formats.build import DUMP_FOLDER, LOG_FILE, BuildFolder
from hloscope.formats.compile_record import CompileResult
from hloscope.loader.build import load_build
from hloscope.sweeps.faults import kill_self_mid_compile
from hloscope.sweeps.transfer import pack_folder, unpack_folder
from hloscope.workloads.build import BuildSpec, run_build, write_build
from hloscope.workloads.cache import CACHED_STATUSES, BuildCache
from hloscope.workloads.runner import tail_of_log
from hloscope.workloads.seal import seal_problem

RETRYABLE_STATUSES = frozenset({"crash"})  # the compile process died (killed, SIGSEGV)


@dataclass(frozen=True)
class CompileTask:
    """One compile of one sweep case (picklable)."""

    case: str  # the name the sweep ranks it by
    spec: BuildSpec
    cache_root: str | None
    folder: str | None  # without the cache: the build folder in the sweep folder
    timeout: float
    attempt: str  # unique per attempt: names its staging folder
    probe: str | None = None  # a driver's file; a worker that cannot see it sends the build back
    kill_mid_compile: bool = False  # fault injection (faults.py)

    @property
    def attempt_folder(self) -> Path:
        if self.cache_root is None:
            return Path(self.folder or ".")
        return BuildCache(Path(self.cache_root)).staging(self.spec.cache_key(), self.attempt)


@dataclass(frozen=True)
class TaskOutcome:
    variant: str  # the case name
    batch: int
    folder: str
    cache_hit: bool
    figures: VariantFigures
    seconds: float
    attempts: int = 1
    lost: tuple[str, ...] = ()  # why each earlier attempt was lost
    archive: bytes | None = None  # the build folder, when the worker's files are not the driver's

    @property
    def retryable(self) -> bool:
        return self.figures.status in RETRYABLE_STATUSES


def run_task(task: CompileTask) -> TaskOutcome:
    """A worker's job: build (or find in the cache), then analyse."""
    started = time.perf_counter()
    shared = task.probe is None or Path(task.probe).exists()
    stop = kill_self_mid_compile() if task.kill_mid_compile else None
    try:
        build, hit = _build(task, shared)
    finally:
        if stop is not None:
            stop.set()
    figures = variant_figures(load_build(build), task.case)
    archive = None if shared else pack_folder(build.folder)
    if not shared and task.cache_root is None:
        shutil.rmtree(build.folder, ignore_errors=True)
    return TaskOutcome(task.case, task.spec.config.batch, str(build.folder), hit, figures,
                       time.perf_counter() - started, archive=archive)


def _build(task: CompileTask, shared: bool) -> tuple[BuildFolder, bool]:
    if task.cache_root is not None:
        return BuildCache(Path(task.cache_root)).build(task.spec, task.timeout, task.attempt)
    if shared:
        folder = Path(task.folder or ".")
        if folder.exists():  # a killed attempt's leftovers
            shutil.rmtree(folder)
    else:
        folder = Path(tempfile.mkdtemp(prefix="hloscope-build-"))
    return run_build(task.spec, folder, task.timeout), False


def receive(task: CompileTask, outcome: TaskOutcome) -> TaskOutcome:
    """The outcome with its build folder on the driver's file system (unpacked when it came
    packed; a cacheable build is published in the driver's cache once its seal checks out)."""
    if outcome.archive is None:
        return outcome
    if task.cache_root is None:
        folder = unpack_folder(outcome.archive, task.attempt_folder)
    else:
        folder = _receive_into_cache(task, outcome)
    return dataclasses.replace(outcome, folder=str(folder), archive=None)


def _receive_into_cache(task: CompileTask, outcome: TaskOutcome) -> Path:
    cache = BuildCache(Path(task.cache_root or "."))
    key = task.spec.cache_key()
    staging = unpack_folder(outcome.archive or b"", cache.staging(key, task.attempt + "-received"))
    if outcome.figures.status not in CACHED_STATUSES:
        return staging
    problem = seal_problem(staging, key)
    if problem is not None:
        raise OSError(f"the build of {task.case} arrived damaged: {problem}")
    return cache.publish(key, staging).folder


def discard_attempt(task: CompileTask) -> None:
    """Removes a dead attempt's staging folder from the cache (nothing else will read it)."""
    if task.cache_root is not None:
        shutil.rmtree(task.attempt_folder, ignore_errors=True)


def lost_outcome(task: CompileTask, reason: str, attempts: int) -> TaskOutcome:
    """A failed result for a task whose worker died every time: a build folder (status crash)
    holding the last attempt's log."""
    source = task.attempt_folder
    log = source / LOG_FILE
    text = log.read_bytes() if log.exists() else b""
    destination = source if task.cache_root is None else source.with_name(source.name + "-lost")
    if destination.exists():
        shutil.rmtree(destination)
    destination.mkdir(parents=True)
    (destination / LOG_FILE).write_bytes(text)
    discard_attempt(task)
    error = f"the worker died {attempts} times ({reason}); gave up"
    result = CompileResult(target=task.spec.target, status="crash",
                           dump_dir=str(destination / DUMP_FOLDER), error=error,
                           log_tail=tail_of_log(destination / LOG_FILE))
    build = write_build(task.spec, result, destination)
    return TaskOutcome(task.case, task.spec.config.batch, str(destination), False,
                       variant_figures(load_build(build), task.case), 0.0, attempts)
