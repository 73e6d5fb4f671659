"""`hloscope sweep`: compile remat variants on an executor, analyse them, rank them (no jax).

A sweep is a set of cases — every variant at every grid point (`grid`) — each with a batch plan
(one fixed batch, or `--search batch`'s search: `search`). `scheduler.Scheduler` runs the plans'
compiles on an executor (`executors`: fresh local worker processes, or Ray tasks), retries
compiles whose worker died, and reports progress to a `SweepListener`. Every worker builds
through the shared content-addressed cache (`cache.BuildCache`: the same key is never compiled
twice, a damaged entry never trusted) — the compile itself runs in the worker's own child
process (`runner.compile_in_subprocess`), so a libtpu crash is a result — and analyses the
optimized HLO (`loader.build.load_build`, then `variant_figures`). The builds are then gathered
into the sweep folder and `ranking.rank_variants` names the winner: the fastest case that fits.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hloscope.configs.any_config import AnyConfig
from hloscope.configs.config import param_count
from hloscope.configs.flags import CompileFlags
from hloscope.configs.policies import Variant
from hloscope.configs.step import StepConfig
from hloscope.configs.targets import Target, parse_target
from hloscope.dataframes import DataFrames
from hloscope.devices import memory_budget
from hloscope.errors import UsageError
from hloscope.formats.build import LOG_FILE, read_build
from hloscope.formats.sweep import builds_folder, write_sweep
from hloscope.optional import require, require_compiler
from hloscope.sweeps.executor_base import ExecutorSpec
from hloscope.sweeps.executors import open_executor
from hloscope.sweeps.faults import attempts_to_kill
from hloscope.sweeps.grid import Case, Grid, sweep_cases
from hloscope.sweeps.ranking import Verdict, rank_variants
from hloscope.sweeps.rows import VariantOutcome, variant_row
from hloscope.sweeps.scheduler import DEFAULT_RETRIES, Plan, Scheduler, SweepListener
from hloscope.sweeps.search import (
    DEFAULT_MAX_PROBES,
    DEFAULT_WINDOW,
    END_BUDGET,
    END_NO_VERDICT,
    BatchSearch,
    FixedBatch,
)
from hloscope.sweeps.tasks import CompileTask, TaskOutcome
from hloscope.sweeps.transfer import Probe
from hloscope.workloads.build import BuildSpec, prepare_folder
from hloscope.workloads.cache import copy_build, new_attempt_id

__all__ = ["FrontierOptions", "SweepListener", "SweepRequest", "SweepResult", "TaskOutcome",
           "run_sweep"]


@dataclass(frozen=True, kw_only=True)
class FrontierOptions:
    """`--search frontier`'s own settings (`sweeps.frontier_run`)."""

    capacity: int | None = None  # bytes per device; None: the target device's
    names: tuple[str, ...] | None = None  # the block names varied; None: every residual one
    choices: tuple[str, ...] | None = None  # what each may be; None: device, offload, remat


@dataclass(frozen=True, kw_only=True)
class SweepRequest:
    """One sweep, parsed once (`hloscope.api.sweep_request`, from the API's keywords or the
    CLI's options): what compiles, where, and how the batch or policy is searched."""

    model: str  # a preset, or a user step's factory (`base` a StepConfig)
    base: AnyConfig
    variants: tuple[Variant, ...]
    target: str
    jobs: int | None = None  # compiles at once; None: the executor's default
    search_batch: bool = False
    max_batch: int = 1 << 16
    cache_root: Path | None = None  # None: no cache (then out_dir is required)
    out_dir: Path | None = None
    timeout: float = 3600.0
    grid: Grid | None = None  # None: the base config's sequence length and batch
    executor: ExecutorSpec = field(default_factory=ExecutorSpec)
    retries: int = DEFAULT_RETRIES
    flags: CompileFlags = field(default_factory=CompileFlags)  # user and environment XLA flags
    search_window: int = DEFAULT_WINDOW  # --search batch: failures required above the answer
    max_probes: int = DEFAULT_MAX_PROBES  # --search batch: compiles per case at most
    frontier: FrontierOptions | None = None  # --search frontier (then `variants` is `full`)
    measure: int = 0  # --measure K: the K fastest predicted variants run on a local device
    measure_steps: int = 3

    @functools.cached_property
    def parsed_target(self) -> Target:
        """`target` (the canonical string, as sweep.json records it) parsed, once per request."""
        return parse_target(self.target)

    @property
    def data_parallel(self) -> int:
        """Ways the batch is split (every device the tensor axis leaves, on any mesh)."""
        return self.parsed_target.num_devices // self.base.tensor_parallel

    @property
    def batch_step(self) -> int:
        """The finest legal step of a global batch: it must split evenly over the mesh axes
        that shard it, and each micro-batch of gradient accumulation must too. The batch is
        sharded over every device tensor parallelism leaves (`data`, or `data` x `fsdp` on a
        multislice mesh, whose `data` is DCN data x ICI data), so no mesh here allows a step
        finer than `data_parallel`; splitting it over fewer axes would replicate activations,
        and padding it would compile the padded batch."""
        # micro_batches comes with gradient accumulation; configs without it have one
        return self.data_parallel * getattr(self.base, "micro_batches", 1)

    @property
    def sweep_grid(self) -> Grid:
        return self.grid or Grid.single(self.base)

    def cases(self) -> list[Case]:
        return sweep_cases(self.variants, self.sweep_grid)

    def spec(self, case: Case, batch: int) -> BuildSpec:
        return BuildSpec(self.model, case.variant.name, self.target, case.config(self.base, batch),
                         flags=self.flags)


@dataclass
class SweepResult(DataFrames):
    """What a sweep found; `to_pandas()` is the variants table (and the batch search's probes)
    as `hloscope sweep` shows it, `to_dict()` its JSON document."""

    request: SweepRequest
    outcomes: list[VariantOutcome]
    winner: str | None
    verdicts: dict[str, Verdict]
    wall_seconds: float
    compiles: int
    cache_hits: int
    retried: int = 0
    notes: list[str] = field(default_factory=list)
    measured: list[Any] | None = None  # sweeps.measure.MeasuredStep, with --measure

    def rows(self) -> list[dict[str, Any]]:
        return [variant_row(o, self.verdicts[o.variant]) for o in self.outcomes]

    def to_dict(self) -> dict[str, Any]:
        request = self.request
        target = request.parsed_target
        grid = request.sweep_grid
        return {
            "model": request.model, "target": target.spec, "device": target.device.description,
            "devices": target.num_devices, "capacity_bytes": memory_budget(target.device),
            "num_slices": target.num_slices, "target_description": target.describe(),
            "flags": request.flags.to_dict(),
            "config": _config_record(request.base), "parameters": _parameters(request.base),
            "search": "batch" if request.search_batch else None, **_search_settings(request),
            "winner": self.winner,
            "grid": {"seq_len": list(grid.seq_lens), "batch": list(grid.batches)},
            "variants": self.rows(), "compiles": self.compiles, "cache_hits": self.cache_hits,
            "executor": request.executor.kind, "retries": request.retries,
            "retried": self.retried, "wall_seconds": self.wall_seconds, "notes": self.notes,
            "measured": None if self.measured is None else
            [step.to_dict() for step in self.measured],
            "ranked_by": "measured" if self.measured else "predicted",
        }


def _config_record(config: AnyConfig) -> dict[str, Any]:
    return config.describe() if isinstance(config, StepConfig) else config.to_dict()


def _parameters(config: AnyConfig) -> int | None:
    """The built-in model's closed-form count; None for a user step (not known here)."""
    return None if isinstance(config, StepConfig) else param_count(config)


def _search_settings(request: SweepRequest) -> dict[str, int | None]:
    searching = request.search_batch
    return {"batch_step": request.batch_step if searching else None,
            "search_window": request.search_window if searching else None,
            "max_probes": request.max_probes if searching else None}


def run_sweep_folder(request: SweepRequest, force: bool = False,
                     listener: SweepListener | None = None) -> SweepResult:
    """`run_sweep`, with its output folder prepared first (refused when not empty, unless
    `force`; after validation, so a bad request touches nothing) and its sweep.json written."""
    validate(request)
    if request.out_dir is not None:
        prepare_folder(request.out_dir, force)
    result = run_sweep(request, listener)
    if request.out_dir is not None:
        write_sweep(request.out_dir, result.to_dict())
    return result


def validate(request: SweepRequest) -> None:
    target = request.parsed_target
    grid = request.sweep_grid
    if request.executor.kind == "local":  # Ray workers bring their own jax
        require_compiler(target.backend, f"a sweep for {target.spec}")
    else:
        require("ray", "ray", "--executor ray needs Ray")
    if request.search_batch and memory_budget(target.device) is None:
        raise UsageError(f"--search batch needs a memory capacity; {target.spec} has none")
    if request.search_batch and len(grid.batches) > 1:
        raise UsageError("--search batch finds the batch itself: give one --batch to start from")
    if request.cache_root is None and request.out_dir is None:
        raise UsageError("without the cache a sweep needs an output folder (-o DIR)")
    if request.jobs is not None and request.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if request.search_batch:
        _validate_search(request)
    if isinstance(request.base, StepConfig) and 0 in grid.batches and request.search_batch:
        raise UsageError("--search batch with --step needs the batch to start from (--batch "
                         "N); the factory builds the step from remat.batch")
    uneven = [b for b in grid.batches if b and b % request.data_parallel]
    if not request.search_batch and uneven:
        raise UsageError(f"batch {uneven[0]} does not split over the "
                         f"{request.data_parallel}-way data axis of {target.spec}")
    for case in request.cases():  # e.g. a sequence length the positions cannot take
        request.spec(case, case.point.batch).mesh()  # a mesh the target's devices cannot form
        config = case.config(request.base, case.point.batch)
        if isinstance(config, StepConfig):
            continue  # the factory builds its own model: nothing more to check here
        # Splash off TPU; micro-batches that do not divide (a search picks its own batches).
        config.check_placement(target.backend,
                               0 if request.search_batch else request.data_parallel)


def _validate_search(request: SweepRequest) -> None:
    if request.max_batch < request.batch_step:
        raise UsageError(f"--max-batch {request.max_batch} is below the smallest batch that "
                         f"splits over the mesh ({request.batch_step})")
    if request.search_window < 1 or request.max_probes < 1:
        raise UsageError("--search-window and --max-probes must be at least 1")


def plan_for(request: SweepRequest, case: Case) -> Plan:
    if request.search_batch:
        return BatchSearch(case.point.batch, request.batch_step, request.max_batch,
                           request.search_window, request.max_probes)
    return FixedBatch(case.point.batch)


@dataclass(frozen=True)
class TaskFactory:
    """Makes the CompileTask of a case's compile at a batch (a fresh attempt id each time)."""

    request: SweepRequest
    cases: dict[str, Case]
    probe: Probe | None
    kill_attempts: int = 0  # fault injection: the first N attempts kill their worker

    def __call__(self, name: str, batch: int, number: int) -> CompileTask:
        request, case = self.request, self.cases[name]
        folder = None
        if request.cache_root is None and request.out_dir is not None:
            folder = str(build_folder(request.out_dir, case, batch, request.search_batch))
        cache = None if request.cache_root is None else str(request.cache_root)
        return CompileTask(name, request.spec(case, batch), cache, folder, request.timeout,
                           new_attempt_id(), None if self.probe is None else str(self.probe.path),
                           kill_mid_compile=number <= self.kill_attempts)


def run_sweep(request: SweepRequest, listener: SweepListener | None = None) -> SweepResult:
    validate(request)
    started = time.perf_counter()
    cases = request.cases()
    plans: dict[str, Plan] = {case.name: plan_for(request, case) for case in cases}
    executor = open_executor(request.executor, request.parsed_target.backend)
    probe = _probe(request)
    try:
        scheduler = Scheduler(plans, TaskFactory(request, {c.name: c for c in cases}, probe,
                                                 attempts_to_kill()),
                              executor, request.jobs or executor.default_slots(),
                              request.retries, listener)
        done = scheduler.run()
    finally:
        if probe is not None:
            probe.remove()
    outcomes = [_variant_outcome(request, case, plans[case.name], done[case.name])
                for case in cases]
    winner, verdicts = rank_variants([outcome.figures for outcome in outcomes])
    every = [o for outs in done.values() for o in outs]
    return SweepResult(request, outcomes, winner, verdicts, time.perf_counter() - started,
                       compiles=sum(not o.cache_hit for o in every),
                       cache_hits=sum(o.cache_hit for o in every), retried=scheduler.retried,
                       notes=_notes(request, outcomes))


def _probe(request: SweepRequest) -> Probe | None:
    """Ray workers may run on other machines: they check for this file to know whether they
    see the driver's cache (or sweep folder) or must send their builds back."""
    if request.executor.kind != "ray":
        return None
    folder = request.cache_root or request.out_dir
    return None if folder is None else Probe.create(folder)


def build_folder(out_dir: Path, case: Case, batch: int, per_batch: bool) -> Path:
    name = f"{case.file_name}-batch{batch}" if per_batch else case.file_name
    return builds_folder(out_dir) / name


def _variant_outcome(request: SweepRequest, case: Case, plan: Plan,
                     outcomes: list[TaskOutcome]) -> VariantOutcome:
    chosen = plan.chosen_batch
    representative = next(o for o in reversed(outcomes) if o.batch == chosen)
    folder = representative.folder
    if request.out_dir is not None and request.cache_root is not None:
        folder = str(_export(request, case, outcomes, representative))
    search = plan if isinstance(plan, BatchSearch) else None
    return VariantOutcome(case.name, case, representative.figures, folder,
                          representative.cache_hit, list(plan.probes),
                          attempts=representative.attempts, lost=representative.lost,
                          largest_fitting_batch=search.largest if search else None,
                          smallest_failing_batch=search.smallest_failing if search else None,
                          non_monotonic=search.non_monotonic if search else [],
                          search_end=search.end if search else None)


def _export(request: SweepRequest, case: Case, outcomes: list[TaskOutcome],
            representative: TaskOutcome) -> Path:
    """Copies the case's builds from the cache into the sweep folder; the representative's
    copy is returned."""
    chosen = Path(".")
    assert request.out_dir is not None
    for outcome in outcomes:
        destination = build_folder(request.out_dir, case, outcome.batch, request.search_batch)
        copy_build(read_build(Path(outcome.folder)), destination)
        if outcome is representative:
            chosen = destination
    return chosen


def _notes(request: SweepRequest, outcomes: list[VariantOutcome]) -> list[str]:
    notes = _model_notes(request)
    lower_bound = [o.variant for o in outcomes if o.figures.hlo and o.figures.hlo.unknown_loops]
    if lower_bound:
        notes.append("FLOPs are lower bounds (loops with unknown trip counts counted once) for: "
                     + ", ".join(lower_bound))
    notes += closed_form_notes(outcomes)
    notes += [f"{o.variant}: compiled on attempt {o.attempts} (earlier workers died)"
              for o in outcomes if o.attempts > 1 and o.figures.status != "crash"]
    notes += [f"{o.variant}: failed after {o.attempts} attempts; log: {o.folder}/{LOG_FILE}"
              for o in outcomes if o.figures.status == "crash"]
    return notes + [note for o in outcomes for note in _search_notes(request, o)]


def _model_notes(request: SweepRequest) -> list[str]:
    base = request.base
    if not isinstance(base, StepConfig):
        return [f"{param_count(base):,} parameters"]
    notes = [f"your step: {base.factory}, compiled in child processes for each variant"]
    if not base.tokens_known:
        notes.append("tokens per step unknown (no --batch and --seq): rates are steps per "
                     "second, not tokens per second")
    return notes


def closed_form_notes(outcomes: list[VariantOutcome]) -> list[str]:
    """Which variants' FLOPs (and so step estimates) include Pallas kernels' closed forms."""
    kernels_of = {o.variant: o.figures.hlo.closed_form_kernels for o in outcomes
                  if o.figures.hlo and o.figures.hlo.closed_form_kernels}
    if not kernels_of:
        return []
    kernels = sorted({k for found in kernels_of.values() for k in found})
    return ["FLOPs include the closed forms of Pallas kernels XLA counts as nothing ("
            + ", ".join(kernels) + ") for: " + ", ".join(kernels_of)]


def _search_notes(request: SweepRequest, outcome: VariantOutcome) -> list[str]:
    """Where fit was not monotonic in batch, and searches that ended before their guarantee."""
    notes = []
    if outcome.non_monotonic:
        pairs = "; ".join(f"{fails} does not fit but {fits} does"
                          for fails, fits in outcome.non_monotonic)
        notes.append(f"{outcome.variant}: fit is not monotonic in batch: {pairs}")
    found = outcome.largest_fitting_batch
    best = "nothing fits" if found is None else f"{found} is the largest fit found"
    if outcome.search_end == END_BUDGET:
        notes.append(f"{outcome.variant}: the batch search stopped after --max-probes "
                     f"{request.max_probes} compiles; {best}, the steps above it not all compiled")
    if outcome.search_end == END_NO_VERDICT:
        broken = next(p for p in outcome.probes if p.fits is None)
        notes.append(f"{outcome.variant}: the batch search stopped: the compile at batch "
                     f"{broken.batch} gave no verdict ({broken.status}); {best}")
    return notes
