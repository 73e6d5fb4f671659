"""`hloscope sweep`: compile remat variants in worker processes, analyse them, rank them (no jax).

Each compile is a task for a `ProcessPoolExecutor` started with `spawn` and one task per worker
(`max_tasks_per_child=1`), so every worker is a fresh interpreter and returns its memory; the
worker builds through the cache (`cache.BuildCache`: the same key is never compiled twice) —
the compile itself runs in the worker's own child process (`runner.compile_in_subprocess`), so
a libtpu crash is a result — and then analyses the optimized HLO (`figures.variant_figures`).
The parent only schedules: each variant has a batch plan (`search.FixedBatch`, or
`search.BatchSearch` for `--search batch`) that asks for one compile at a time, and up to `jobs`
variants compile at once. Results come back in completion order to a `SweepListener` (the CLI's
progress bar), then `ranking.rank_variants` names the winner.
"""
from __future__ import annotations

import dataclasses
import multiprocessing
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hloscope.devices import memory_budget
from hloscope.errors import UsageError
from hloscope.workloads.build import BuildSpec, run_build
from hloscope.workloads.cache import BuildCache, copy_build
from hloscope.workloads.config import TransformerConfig, param_count
from hloscope.workloads.figures import VariantFigures, variant_figures
from hloscope.workloads.policies import Variant
from hloscope.workloads.ranking import Verdict, rank_variants
from hloscope.workloads.roofline import StepEstimate
from hloscope.workloads.search import BatchSearch, FixedBatch, Probe
from hloscope.workloads.targets import parse_target

DEFAULT_JOBS = 2


@dataclass(frozen=True)
class SweepRequest:
    model: str
    base: TransformerConfig
    variants: tuple[Variant, ...]
    target: str
    jobs: int = DEFAULT_JOBS
    search_batch: bool = False
    max_batch: int = 1 << 16
    cache_root: Path | None = None  # None: no cache (then out_dir is required)
    out_dir: Path | None = None
    timeout: float = 3600.0

    @property
    def data_parallel(self) -> int:
        return parse_target(self.target).num_devices // self.base.tensor_parallel

    def spec(self, variant: Variant, batch: int) -> BuildSpec:
        config = dataclasses.replace(variant.apply(self.base), batch=batch)
        return BuildSpec(self.model, variant.name, self.target, config)


@dataclass(frozen=True)
class CompileTask:
    """One compile for a pool worker (picklable)."""

    spec: BuildSpec
    cache_root: str | None
    folder: str | None
    timeout: float


@dataclass(frozen=True)
class TaskOutcome:
    variant: str
    batch: int
    folder: str
    cache_hit: bool
    figures: VariantFigures
    seconds: float


def run_task(task: CompileTask) -> TaskOutcome:
    """A pool worker's job: build (or find in the cache), then analyse."""
    started = time.perf_counter()
    if task.cache_root is not None:
        build, hit = BuildCache(Path(task.cache_root)).build(task.spec, task.timeout)
    else:
        build, hit = run_build(task.spec, Path(task.folder or "."), task.timeout), False
    figures = variant_figures(build, task.spec.variant)
    return TaskOutcome(task.spec.variant, task.spec.config.batch, str(build.folder), hit,
                       figures, time.perf_counter() - started)


class SweepListener(Protocol):
    def started(self, variant: str, batch: int) -> None: ...

    def finished(self, outcome: TaskOutcome, variant_done: bool) -> None: ...


@dataclass
class VariantOutcome:
    """A variant's representative build (at its chosen batch) and every probe it took."""

    variant: str
    figures: VariantFigures
    folder: str
    cache_hit: bool
    probes: list[Probe]
    largest_fitting_batch: int | None = None
    smallest_failing_batch: int | None = None


@dataclass
class SweepResult:
    request: SweepRequest
    outcomes: list[VariantOutcome]
    winner: str | None
    verdicts: dict[str, Verdict]
    wall_seconds: float
    compiles: int
    cache_hits: int
    notes: list[str] = field(default_factory=list)

    def rows(self) -> list[dict[str, Any]]:
        return [variant_row(o, self.verdicts[o.variant]) for o in self.outcomes]

    def to_dict(self) -> dict[str, Any]:
        request = self.request
        target = parse_target(request.target)
        return {
            "model": request.model, "target": target.spec, "device": target.device.description,
            "devices": target.num_devices, "capacity_bytes": memory_budget(target.device),
            "config": request.base.to_dict(), "parameters": param_count(request.base),
            "search": "batch" if request.search_batch else None, "winner": self.winner,
            "variants": self.rows(), "compiles": self.compiles, "cache_hits": self.cache_hits,
            "wall_seconds": self.wall_seconds, "notes": self.notes,
        }


Plan = FixedBatch | BatchSearch


def validate(request: SweepRequest) -> None:
    target = parse_target(request.target)
    if request.search_batch and memory_budget(target.device) is None:
        raise UsageError(f"--search batch needs a memory capacity; {target.spec} has none")
    if request.cache_root is None and request.out_dir is None:
        raise UsageError("without the cache a sweep needs an output folder (-o DIR)")
    if request.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if not request.search_batch and request.base.batch % request.data_parallel:
        raise UsageError(f"batch {request.base.batch} does not split over the "
                         f"{request.data_parallel}-way data axis of {target.spec}")


def plan_for(request: SweepRequest) -> Callable[[], Plan]:
    if request.search_batch:
        return lambda: BatchSearch(request.base.batch, request.data_parallel, request.max_batch)
    return lambda: FixedBatch(request.base.batch)


def run_sweep(request: SweepRequest, listener: SweepListener | None = None) -> SweepResult:
    validate(request)
    started = time.perf_counter()
    make_plan = plan_for(request)
    plans = {variant.name: make_plan() for variant in request.variants}
    done = _run_plans(request, plans, listener)
    outcomes = [_variant_outcome(request, variant, plans[variant.name], done[variant.name])
                for variant in request.variants]
    winner, verdicts = rank_variants([outcome.figures for outcome in outcomes])
    every = [o for outs in done.values() for o in outs]
    return SweepResult(request, outcomes, winner, verdicts, time.perf_counter() - started,
                       compiles=sum(not o.cache_hit for o in every),
                       cache_hits=sum(o.cache_hit for o in every),
                       notes=_notes(request, outcomes))


def _run_plans(request: SweepRequest, plans: dict[str, Plan],
               listener: SweepListener | None) -> dict[str, list[TaskOutcome]]:
    variants = {variant.name: variant for variant in request.variants}
    results: dict[str, list[TaskOutcome]] = {name: [] for name in plans}
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=request.jobs, mp_context=context,
                             max_tasks_per_child=1) as pool:
        in_flight: dict[Future[TaskOutcome], tuple[str, int]] = {}
        while True:
            _submit(request, pool, plans, variants, in_flight, listener)
            if not in_flight:
                return results
            finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in finished:
                name, batch = in_flight.pop(future)
                outcome = future.result()
                figures = outcome.figures
                plans[name].record(batch, figures.fits, figures.status)
                results[name].append(outcome)
                if listener is not None:
                    listener.finished(outcome, plans[name].next_batch() is None)


def _submit(request: SweepRequest, pool: ProcessPoolExecutor, plans: dict[str, Plan],
            variants: dict[str, Variant], in_flight: dict[Future[TaskOutcome], tuple[str, int]],
            listener: SweepListener | None) -> None:
    busy = {name for name, _ in in_flight.values()}
    for name, plan in plans.items():
        if len(in_flight) >= request.jobs:
            return
        batch = None if name in busy else plan.next_batch()
        if batch is None:
            continue
        task = _task(request, variants[name], batch)
        in_flight[pool.submit(run_task, task)] = (name, batch)
        if listener is not None:
            listener.started(name, batch)


def _task(request: SweepRequest, variant: Variant, batch: int) -> CompileTask:
    spec = request.spec(variant, batch)
    folder = None
    if request.cache_root is None and request.out_dir is not None:
        folder = str(build_folder(request.out_dir, variant, batch, request.search_batch))
    cache = None if request.cache_root is None else str(request.cache_root)
    return CompileTask(spec, cache, folder, request.timeout)


def build_folder(out_dir: Path, variant: Variant, batch: int, per_batch: bool) -> Path:
    name = f"{variant.file_name}-batch{batch}" if per_batch else variant.file_name
    return out_dir / "builds" / name


def _variant_outcome(request: SweepRequest, variant: Variant, plan: Plan,
                     outcomes: list[TaskOutcome]) -> VariantOutcome:
    chosen = plan.chosen_batch
    representative = next(o for o in reversed(outcomes) if o.batch == chosen)
    folder = representative.folder
    if request.out_dir is not None and request.cache_root is not None:
        folder = str(_export(request, variant, outcomes, representative))
    search = plan if isinstance(plan, BatchSearch) else None
    return VariantOutcome(variant.name, representative.figures, folder, representative.cache_hit,
                          list(plan.probes),
                          largest_fitting_batch=search.largest if search else None,
                          smallest_failing_batch=search.smallest_failing if search else None)


def _export(request: SweepRequest, variant: Variant, outcomes: list[TaskOutcome],
            representative: TaskOutcome) -> Path:
    """Copies the variant's builds from the cache into the sweep folder; the representative's
    copy is returned."""
    from hloscope.workloads.build import load_build

    chosen = Path(".")
    assert request.out_dir is not None
    for outcome in outcomes:
        destination = build_folder(request.out_dir, variant, outcome.batch, request.search_batch)
        copy_build(load_build(Path(outcome.folder)), destination)
        if outcome is representative:
            chosen = destination
    return chosen


def _notes(request: SweepRequest, outcomes: list[VariantOutcome]) -> list[str]:
    notes = [f"{param_count(request.base):,} parameters"]
    lower_bound = [o.variant for o in outcomes if o.figures.hlo and o.figures.hlo.unknown_loops]
    if lower_bound:
        notes.append("FLOPs are lower bounds (loops with unknown trip counts counted once) for: "
                     + ", ".join(lower_bound))
    return notes


def variant_row(outcome: VariantOutcome, verdict: Verdict) -> dict[str, Any]:
    """Every column of one variant, flat (bytes and FLOPs as integers)."""
    figures = outcome.figures
    step = figures.step
    return {
        "variant": outcome.variant, "outcome": verdict.outcome, "rank": verdict.rank,
        "reason": verdict.reason, "duplicate_of": verdict.duplicate_of,
        "status": figures.status, "fits": figures.fits, "fit_source": figures.fit_source,
        "predicted_fits": figures.predicted_fits, "live_peak_fits": figures.live_peak_fits,
        "batch": figures.batch, "tokens": figures.tokens,
        "required_bytes": figures.required_bytes, "required_source": figures.required_source,
        "capacity_bytes": figures.capacity_bytes, "memory_fraction": _fraction(figures),
        "host_temp_bytes": figures.host_temp_bytes,
        "compile_seconds": figures.compile_seconds, "cache_hit": outcome.cache_hit,
        **_hlo_columns(figures),
        "step_seconds": figures.step_seconds,
        **_step_columns(step),
        "tokens_per_second": figures.tokens_per_second,
        "fingerprint": figures.fingerprint, "build_folder": outcome.folder,
        "error": figures.error, "analysis_error": figures.analysis_error,
        "gpu_remat_warning": figures.gpu_remat_warning,
        "largest_fitting_batch": outcome.largest_fitting_batch,
        "smallest_failing_batch": outcome.smallest_failing_batch,
        "probes": [dataclasses.asdict(probe) for probe in outcome.probes],
    }


def _hlo_columns(figures: VariantFigures) -> dict[str, Any]:
    hlo = figures.hlo
    names = ("total_flops", "forward_flops", "recompute_flops", "recompute_overhead",
             "bytes_accessed", "collective_bytes", "to_host_bytes", "from_host_bytes",
             "unknown_loops", "live_peak_bytes")
    values = {name: None if hlo is None else getattr(hlo, name) for name in names}
    return {**values, "xla_flops": figures.xla_flops}


def _step_columns(step: StepEstimate | None) -> dict[str, Any]:
    names = ("compute_seconds", "memory_seconds", "collective_seconds", "offload_seconds",
             "bound")
    values = {name: None if step is None else getattr(step, name) for name in names}
    return {**values, "estimate_missing": [] if step is None else list(step.missing)}


def _fraction(figures: VariantFigures) -> float | None:
    if figures.required_bytes is None or not figures.capacity_bytes:
        return None
    return figures.required_bytes / figures.capacity_bytes
