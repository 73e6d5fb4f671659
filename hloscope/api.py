"""The Python API behind `hloscope/__init__.py`: one function per command, on anything loaded.

Each function returns the result object the CLI renders; every result has `.to_dict()` (the
JSON document of `--format json`, without its "schema" key) and most have `.to_pandas()` (one
DataFrame per table, see `hloscope.dataframes`). A program argument is a `Program` from
`load_program()`, an `HloModule` from `load()` or `from_jax()`, or anything `load()` takes (a
path, a dump or build folder, HLO text); side files (XLA's memory files, a build manifest, a
capture record, the compile log) are found by the loader, once. The CLI commands call these
functions (or, where they need an intermediate for their report, the same analyses they call).

A target is a `Target` or its string, parsed once where a function is entered. A sweep is a
keyword-only `SweepRequest` (`sweep_request`, from `sweep`'s keywords or the CLI's options) that
`run_sweep` runs. `__all__` is what `hloscope` re-exports; the other public names here
(`as_module`, `build_spec`, `build_from`) are the CLI's, and the underscored ones this module's.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from hloscope.analyses.cost import CostOptions
from hloscope.analyses.cost.flops import BREAKDOWNS, DEFAULT_SCOPE_DEPTH, FlopsResult
from hloscope.analyses.memory.analysis import MemoryResult
from hloscope.configs.any_config import AnyConfig
from hloscope.configs.targets import Target, parse_target
from hloscope.errors import InputError, UsageError
from hloscope.loader.hlo_input import load_input
from hloscope.loader.program import Program, as_program, load_program
from hloscope.model.module import HloModule

if TYPE_CHECKING:
    from hloscope.analyses.cost.remat import RematResult
    from hloscope.analyses.gate.check import CheckResult
    from hloscope.analyses.gate.compare import CompareResult
    from hloscope.analyses.oom import OomDiagnosis
    from hloscope.analyses.summary.inspect import InspectResult
    from hloscope.analyses.summary.overview import OverviewSet
    from hloscope.analyses.summary.variant import BuildSummary
    from hloscope.analyses.trace.analysis import TraceResult
    from hloscope.configs.config import TransformerConfig
    from hloscope.configs.policies import NamedTensors, Variant
    from hloscope.configs.step import StepConfig, StepTensors
    from hloscope.formats.snapshot import Snapshot
    from hloscope.sweeps.core import SweepListener, SweepRequest, SweepResult
    from hloscope.sweeps.executors import ExecutorSpec
    from hloscope.sweeps.frontier import FrontierResult
    from hloscope.sweeps.grid import Grid
    from hloscope.workloads.build import BuildSpec

__all__ = ["build", "check", "compare", "flops", "from_jax", "inspect", "memory", "oom",
           "oom_step", "policies", "profile", "remat", "report", "run_sweep", "snapshot",
           "step_policies", "sweep", "sweep_request", "trace"]

ModuleLike = Program | HloModule | str | Path
"""What the commands' `hlo` argument takes: a loaded Program or HloModule, or what `load()`
reads (a path to a file, dump or build folder; HLO text)."""
TargetLike: TypeAlias = "str | Target"
"""A `Target`, or its string (`tpu:v6e-128:slices=4`), parsed once where the API is entered."""
StepFactory = Callable[..., Any]
"""A user's `make_step(remat[, layers]) -> (step_fn, args[, jit_kwargs])` (configs/step.py)."""


def _as_target(target: str | Target) -> Target:
    """`target` parsed (a UsageError naming the valid forms when it is none), once."""
    return target if isinstance(target, Target) else parse_target(target)


def as_module(module: ModuleLike) -> HloModule:
    """The module of `module`: itself, a program's, or the one `load()` reads."""
    if isinstance(module, Program):
        return module.module
    return module if isinstance(module, HloModule) else load_input(module)


def inspect(hlo: ModuleLike, costs: bool = True) -> InspectResult:
    """Op counts by opcode and category, the entry's parameters and outputs with their bytes,
    and (with `costs`) the FLOP and recomputation totals: what `hloscope inspect` shows."""
    from hloscope.analyses.summary.inspect import inspect as analyse

    return analyse(as_module(hlo), costs=costs)


def remat(hlo: ModuleLike, scope_depth: int = DEFAULT_SCOPE_DEPTH) -> RematResult:
    """What jax.checkpoint recomputes and what XLA's remat pass cloned, with their cost by layer
    and scope and the recompute overhead: what `hloscope remat` shows."""
    from hloscope.analyses.cost.remat import remat as analyse

    return analyse(as_module(hlo), scope_depth=scope_depth)


def flops(hlo: ModuleLike, by: str | Sequence[str] | None = None,
          scope_depth: int = DEFAULT_SCOPE_DEPTH, xla_conventions: bool = False) -> FlopsResult:
    """FLOPs, transcendentals and bytes with loop trip counts applied, by opcode, scope, layer
    and phase. `by` keeps only those breakdowns (one name: `to_pandas()` is that one frame);
    `xla_conventions` counts loop bodies once, as XLA's cost_analysis() does."""
    from hloscope.analyses.cost.flops import flops as analyse

    options = CostOptions.like_xla() if xla_conventions else None
    result = analyse(as_module(hlo), scope_depth=scope_depth, options=options)
    if by is None:
        return result
    wanted = [by] if isinstance(by, str) else list(by)
    unknown = [name for name in wanted if name not in BREAKDOWNS]
    if unknown:
        raise UsageError(f"unknown breakdown {unknown[0]!r}; choose from {', '.join(BREAKDOWNS)}")
    return dataclasses.replace(result, breakdowns={name: result.rows(name) for name in wanted})


def memory(hlo: ModuleLike, backend: str | None = None,
           scope_depth: int = DEFAULT_SCOPE_DEPTH) -> MemoryResult:
    """The live peak of a scheduled module, the buffers live at it and the timeline; when the
    module was read from an XLA dump (or made by `from_jax`), XLA's own live-range peak and
    allocation too (`result.xla`)."""
    from hloscope.analyses.memory.analysis import program_memory

    return program_memory(as_program(hlo), backend, scope_depth)


def oom(hlo: ModuleLike, device: str | None = None, capacity: int | str | None = None,
        log: str | Path | None = None, sweep: str | Path | None = None,
        top: int = 10) -> OomDiagnosis:
    """Why the program does (or does not) fit one device: the verdict, what is live at the
    peak, and remedies. `device` (v5e, h100, ...) or `capacity` (bytes, or "16GiB") sets what it
    is judged against; `log` is a compile log file. A build folder brings its model config and
    target, a module from `from_jax` its target and the compiler's verdict (an OOM's error
    text); `sweep` (a `hloscope sweep -o DIR` folder) adds its compiled variants to the
    remedies."""
    from hloscope.analyses.oom import diagnose, oom_inputs, resolve_capacity
    from hloscope.analyses.oom.compiled import sweep_offloads_optimizer
    from hloscope.devices import check_device_or_capacity
    from hloscope.formats.sweep import read_sweep
    from hloscope.parsers.gpu_target_config import find_gpu_target
    from hloscope.units import parse_bytes

    check_device_or_capacity(device, capacity)
    inputs = oom_inputs(as_program(hlo, log_path=log))
    given = parse_bytes(capacity) if isinstance(capacity, str) else capacity
    resolved = resolve_capacity(given, device, inputs.log, inputs.device,
                                find_gpu_target(inputs.program.hlo_path))
    record = None if sweep is None else read_sweep(Path(sweep))
    rows = None if record is None else record.variants
    offloaded = record is not None and sweep_offloads_optimizer(record.data.get("config"))
    build = inputs.program.given_build
    step = build is not None and build.model_config is None  # a user's step: no closed forms
    if step and build is not None and rows is not None:
        rows = [row for row in rows if row.variant != build.variant]
    return diagnose(inputs, resolved, rows, top, offloaded, compiled_only=step)


def oom_step(step: str | StepFactory, target: TargetLike = "cpu", policy: str = "none",
             candidates: str | Sequence[str] = "all", device: str | None = None,
             capacity: int | str | None = None, top: int = 10,
             cache: str | Path | None = None, timeout: float = 3600.0,
             xla_flags: Sequence[str] = (), **overrides: Any) -> OomDiagnosis:
    """`oom` of a user's step (`make_step` or a `FILE.py:function` reference) at remat `policy`
    on `target`: `policy` and the `candidates` are compiled as a sweep (into a temporary folder
    removed when Python exits; through `cache` when given), and the remedies are the compiled
    candidates — the closed-form predictions are the built-in model's, so there are none.
    `overrides`: batch, seq_len, compute_dtype and the mesh sizes, as `sweep` takes them."""
    import atexit
    import shutil
    import tempfile

    from hloscope.configs.policies import split_policies
    from hloscope.configs.step import step_policy_name
    from hloscope.formats.sweep import read_sweep

    if isinstance(candidates, str):
        candidates = split_policies(candidates)
    names = list(dict.fromkeys([step_policy_name(policy),
                                *(step_policy_name(c) for c in candidates if c.strip())]))
    folder = Path(tempfile.mkdtemp(prefix="hloscope-oom-step-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    sweep(step if not isinstance(step, str) else "", names, target, folder, force=True,
          cache=cache, timeout=timeout, xla_flags=xla_flags,
          step=step if isinstance(step, str) else None, **overrides)
    record = read_sweep(folder)
    own = next(row for row in record.variants if row.variant == names[0])
    built = own.build_in(folder)
    if built is None:
        raise InputError(f"{names[0]} compiled nothing ({own.status}): {own.reason}")
    return oom(built, device, capacity, sweep=folder, top=top)


def compare(a: ModuleLike, b: ModuleLike, device: str | None = None,
            labels: tuple[str, str] | None = None) -> CompareResult:
    """What differs between two programs, B against A: the headline figures with their deltas,
    opcodes, FLOPs by scope, layer and phase, and the buffers live at the peak that appear,
    disappear or change (matched by op_name and shape). `device` adds a step-time estimate;
    `labels` name A and B (default: their module names)."""
    from hloscope.analyses.gate.compare import compare as compare_modules
    from hloscope.devices import get_device

    target = get_device(device) if device is not None else None
    return compare_modules(as_program(a), as_program(b), target, labels)


def snapshot(hlo: ModuleLike, output: str | Path | None = None,
             force: bool = False) -> Snapshot:
    """The figures `check` compares (peak, allocation, FLOPs, recompute, remat and instruction
    counts, collectives; integers per device) and the toolchain a build manifest records;
    written to `output` as the baseline JSON when given (an existing file only with `force`)."""
    from hloscope.analyses.gate.snapshot import snapshot_program
    from hloscope.formats.snapshot import snapshot_text
    from hloscope.reports.output import write_file

    program = as_program(hlo)
    taken = snapshot_program(program, _label(program)).snapshot
    if output is not None:
        write_file(output, snapshot_text(taken), force)
    return taken


def check(hlo: ModuleLike, baseline: str | Path, max_peak_increase: str | None = None,
          max_allocation_increase: str | None = None, max_flops_increase: str | None = None,
          max_remat_increase: int | None = None, max_peak: str | None = None,
          device: str | None = None, max_step_time_increase: str | None = None,
          allow_backend_change: bool = False) -> CheckResult:
    """The program against a baseline (from `snapshot`) and thresholds: `result.passed`, the
    violations, every checked figure, and a toolchain that differs from the baseline's. At least
    one threshold (or `device`) is needed, and a baseline of another backend is refused unless
    `allow_backend_change` (both UsageError).
    Increases are "2%" or an amount ("64MiB", "1e9"); `device` adds its memory budget and the
    estimated step time (`max_step_time_increase`, a percentage, needs it)."""
    from hloscope.analyses.gate.check import check_program, step_time_threshold, thresholds_for
    from hloscope.devices import get_device
    from hloscope.formats.snapshot import read_snapshot

    target = get_device(device) if device is not None else None
    thresholds = thresholds_for(max_peak_increase, max_allocation_increase, max_flops_increase,
                                max_remat_increase, max_peak)
    if max_step_time_increase is not None:
        if target is None:
            raise UsageError("max_step_time_increase needs a device")
        thresholds.append(step_time_threshold(max_step_time_increase))
    program = as_program(hlo)
    return check_program(program, _label(program), read_snapshot(Path(baseline)), thresholds,
                         target, allow_backend_change)


def trace(source: str | Path, hlo: str | Path | None = None, module: str | None = None,
          device: str | None = None, peak_dtype: str = "bf16",
          scope_depth: int = DEFAULT_SCOPE_DEPTH, json_trace: bool = False, xprof: bool = True,
          export: str | Path | None = None, force: bool = False) -> TraceResult:
    """A profiler trace (a `hloscope profile` folder, a jax.profiler log dir, an xplane.pb or a
    trace JSON) joined to the HLO of the program it ran (`hlo`, else the profile folder's dump,
    else the HloProtos in the trace): self time per op, scope, layer and phase, the remat time
    share, step times, achieved FLOP/s and MFU where `device`'s peak is known. `export` also
    writes a Perfetto / Chrome trace JSON (an existing file only with `force`)."""
    from hloscope.analyses.trace.run import (
        add_measured_memory,
        add_memory_profile,
        add_model_check,
        add_xprof_figures,
        analyse_traced,
        chrome_trace_of,
    )
    from hloscope.loader.trace import load_traced
    from hloscope.reports.output import check_writable, write_file

    check_writable(export, force)
    traced = load_traced(source, hlo, prefer_json=json_trace)
    result = analyse_traced(traced, device, module, scope_depth, peak_dtype)
    if xprof:
        missing = traced.xprof_missing()
        heap = None if missing else traced.xprof_peak_heap_bytes(result.module_name,
                                                                 result.program_id)
        add_xprof_figures(result, traced, heap, missing)
    add_memory_profile(result, traced)
    add_model_check(result, traced)
    add_measured_memory(result, traced)
    if export is not None:
        import json

        write_file(export, json.dumps(chrome_trace_of(result, traced)) + "\n", force)
    return result


def build(output: str | Path, model: str | StepFactory = "tiny", policy: str = "none",
          target: TargetLike = "cpu", config: AnyConfig | None = None,
          force: bool = False, cache: str | Path | None = None, timeout: float = 3600.0,
          xla_flags: Sequence[str] = (), step: str | None = None,
          **overrides: Any) -> BuildSummary:
    """Compiles one remat variant (`policy`) of a built-in transformer (`model`, a preset, with
    config `overrides` such as n_layers=2 or the mesh's dcn_data_parallel / ici_fsdp_parallel,
    or a whole `config`) for `target` (a `Target`, or its string: `tpu:v6e-128:slices=4` for
    4 slices, `:any-topology` for a chip grid that is no real slice) into the build folder
    `output` (refused when not empty, unless `force`); from the build cache at `cache` when
    the same program was compiled before.
    `xla_flags` go to the compile (LIBTPU_INIT_ARGS on TPU, XLA_FLAGS elsewhere) with those of
    the environment, and are recorded. `result.passed` is False when it did not compile or does
    not fit. `model` may be a user's step factory instead (or `step`, a `FILE.py:function` /
    `module:function` reference; configs/step.py): its variant `policy` is compiled, `overrides`
    then being batch / seq_len / compute_dtype and the mesh sizes it is given."""
    spec = build_spec(model, policy, target, config, xla_flags, step=step, **overrides)
    return build_from(spec, output, force, cache, timeout)


def build_from(spec: BuildSpec, output: str | Path, force: bool = False,
               cache: str | Path | None = None, timeout: float = 3600.0) -> BuildSummary:
    """Compiles what `build_spec` made (the CLI's `build` checks it, then compiles it here)."""
    from hloscope.analyses.summary.variant import BuildSummary, variant_figures
    from hloscope.loader.build import load_build
    from hloscope.workloads.build import prepare_folder
    from hloscope.workloads.cache import build_into

    folder = Path(output)
    prepare_folder(folder, force)
    built, cached = build_into(spec, folder, None if cache is None else Path(cache), timeout)
    return BuildSummary(built, variant_figures(load_build(built), spec.variant), cached)


def build_spec(model: str | StepFactory = "tiny", policy: str = "none",
               target: TargetLike = "cpu", config: AnyConfig | None = None,
               xla_flags: Sequence[str] = (), step: str | None = None,
               **overrides: Any) -> BuildSpec:
    """What `build` compiles, checked (the variant, the target, the mesh, jax installed)."""
    from hloscope.configs.policies import parse_variant
    from hloscope.configs.presets import preset_config
    from hloscope.configs.step import StepConfig
    from hloscope.optional import require_compiler
    from hloscope.workloads.build import BuildSpec

    parsed = _as_target(target)
    require_compiler(parsed.backend, f"a build for {parsed.spec}")
    source = step if step is not None else (None if isinstance(model, str) else model)
    if source is not None:
        config = _step_config(source, config, **overrides)
        variant = _step_variants(config, policy, parsed.spec)[0]
        model = config.factory
    else:
        assert isinstance(model, str)
        config = config or preset_config(model, **overrides)
        assert not isinstance(config, StepConfig)
        variant = parse_variant(policy, config)
        config.check_placement(parsed.backend, parsed.num_devices // config.tensor_parallel)
    spec = BuildSpec(model, variant.name, parsed.spec, variant.apply(config),
                     flags=_compile_flags(xla_flags))
    spec.mesh()
    return spec


def profile(output: str | Path, model: str = "tiny", policy: str = "none", steps: int = 2,
            platform: str = "cpu", force: bool = False, timeout: float = 1800.0,
            config: TransformerConfig | None = None, **overrides: Any) -> TraceResult:
    """Runs `steps` train steps of a built-in model variant (`overrides`: config fields such as
    n_layers=4) on the local `platform` under jax.profiler.trace in a child process, writes the
    trace and XLA's dump into `output` (an existing non-empty folder only with `force`), and
    returns what `trace()` returns for it (a whole `config` may replace the preset's)."""
    from hloscope.analyses.trace.run import add_measured_memory, analyse_traced
    from hloscope.configs.policies import parse_variant
    from hloscope.configs.presets import preset_config
    from hloscope.loader.trace import load_traced
    from hloscope.optional import require_compiler
    from hloscope.workloads.profile import ProfileSpec, run_profile

    require_compiler(platform, f"profiling on {platform}")
    config = config or preset_config(model, **overrides)
    variant = parse_variant(policy, config)
    spec = ProfileSpec(model, variant.name, variant.apply(config), steps, platform)
    run_profile(spec, Path(output), force, timeout)
    device = "cpu" if platform == "cpu" else None
    traced = load_traced(Path(output))
    result = analyse_traced(traced, device)
    add_measured_memory(result, traced)
    return result


def sweep(model: str | StepFactory = "tiny", policies: str | Sequence[str] = "all",
          target: TargetLike = "cpu", output: str | Path | None = None, *,
          config: AnyConfig | None = None, grid: Grid | None = None,
          search: str | None = None, search_batch: bool = False, max_batch: int = 1 << 16,
          search_window: int | None = None, max_probes: int | None = None,
          capacity: int | None = None, names: str | Sequence[str] | None = None,
          choices: str | Sequence[str] | None = None, measure: int = 0,
          measure_steps: int = 3, executor: ExecutorSpec | None = None,
          jobs: int | None = None, retries: int | None = None, cache: str | Path | None = None,
          timeout: float = 3600.0, xla_flags: Sequence[str] = (), step: str | None = None,
          force: bool = False, listener: SweepListener | None = None,
          **overrides: Any) -> SweepResult | FrontierResult:
    """Compiles the remat variants `policies` ("all", a comma-separated list or a list of
    names, per-tensor `names:...` policies among them: hloscope.configs.policies) of a built-in
    transformer (`model` with config `overrides`, or a whole `config`) — or of the
    user's step when `model` is a factory `make_step(remat[, layers])` (or `step` names one as
    `FILE.py:function`; see `hloscope.configs.step`) — for `target` (as in `build`) and ranks
    them; the winner (`result.winner`) is the fastest that fits. `output` is a folder for
    sweep.json and every variant's build folder (refused when not empty, unless `force`);
    `cache` a build cache; with neither, the CLI's default build cache (stderr says where).
    `grid` sweeps several batch and sequence lengths. `search="batch"` (or `search_batch`)
    finds each variant's largest batch that fits (`search_window` steps above it compiled and
    failing, at most `max_probes` compiles; `hloscope.sweeps.search`). `search="frontier"`
    ignores `policies`: per batch of `grid` it finds the fastest per-tensor `names:` policy
    that fits `capacity` bytes (default: the device's), predicted from compiled `full`
    baselines and confirmed by few compiles (`hloscope.sweeps.frontier`), varying only `names`
    (default: every residual name of the block; the others recomputed) over `choices`
    (default: device, offload, remat); it returns a FrontierResult. On a user's step the
    names are its traced `checkpoint_name`s, each measured by one compile before the search
    (`hloscope.sweeps.frontier_run`). `measure=K` runs the K fastest predicted variants that
    fit `measure_steps` steps each on the target's own devices (here: the CPU, or a GPU or TPU
    present) and ranks them by the measured step (`result.measured`; `hloscope.sweeps.measure`).
    Every keyword after `output` goes to `sweep_request`; `run_sweep` runs what it makes."""
    if output is None and cache is None:
        cache = _default_cache()
    request = sweep_request(
        model=model, policies=policies, target=target, output=output, config=config,
        grid=grid, search=search, search_batch=search_batch, max_batch=max_batch,
        search_window=search_window, max_probes=max_probes, capacity=capacity, names=names,
        choices=choices, measure=measure, measure_steps=measure_steps, executor=executor,
        jobs=jobs, retries=retries, cache=cache, timeout=timeout, xla_flags=xla_flags,
        step=step, **overrides)
    return run_sweep(request, force, listener)


def run_sweep(request: SweepRequest, force: bool = False,
              listener: SweepListener | None = None,
              measuring: Callable[[int, Path, str], None] | None = None,
              ) -> SweepResult | FrontierResult:
    """Runs a request from `sweep_request`: the frontier search, or the sweep (its batch search)
    and then the measured runs; `measuring(count, folder, platform)` is told before those."""
    from hloscope.sweeps.core import run_sweep_folder

    if request.frontier is not None:
        from hloscope.sweeps.frontier_run import run_frontier

        options = request.frontier
        return run_frontier(request, options.capacity, force, options.names, options.choices)
    if not request.measure:
        return run_sweep_folder(request, force, listener)
    from hloscope.sweeps.measure import candidates, measurable_platform, measure_folder
    from hloscope.sweeps.measure import measure as measure_variants

    platform = measurable_platform(request)  # refused before anything compiles
    result = run_sweep_folder(request, force, listener)
    folder = measure_folder(request)
    if measuring is not None:
        measuring(len(candidates(result, request.measure)), folder, platform)
    return measure_variants(result, request.measure, request.measure_steps, folder, platform,
                            force=True)


def _default_cache() -> Path:
    import sys

    from hloscope.workloads.cache import default_cache_dir

    root = default_cache_dir()
    print(f"hloscope: builds are cached in {root} (pass output= or cache= to choose)",
          file=sys.stderr)
    return root


def sweep_request(*, model: str | StepFactory = "tiny", policies: str | Sequence[str] = "all",
                  target: TargetLike = "cpu", output: str | Path | None = None,
                  config: AnyConfig | None = None, grid: Grid | None = None,
                  search: str | None = None, search_batch: bool = False,
                  max_batch: int = 1 << 16, search_window: int | None = None,
                  max_probes: int | None = None, capacity: int | None = None,
                  names: str | Sequence[str] | None = None,
                  choices: str | Sequence[str] | None = None, measure: int = 0,
                  measure_steps: int = 3, executor: ExecutorSpec | None = None,
                  jobs: int | None = None, retries: int | None = None,
                  cache: str | Path | None = None, timeout: float = 3600.0,
                  xla_flags: Sequence[str] = (), step: str | None = None,
                  **overrides: Any) -> SweepRequest:
    """What `sweep` runs, from its keywords (the CLI's `sweep` builds its request here too):
    the target parsed, the variants resolved against the config, the search chosen. A
    frontier search compiles `full` baselines, whatever `policies` says."""
    from hloscope.configs.policies import parse_variants
    from hloscope.configs.presets import preset_config
    from hloscope.configs.step import StepConfig
    from hloscope.sweeps.core import FrontierOptions, SweepRequest
    from hloscope.sweeps.executors import ExecutorSpec
    from hloscope.sweeps.scheduler import DEFAULT_RETRIES
    from hloscope.sweeps.search import DEFAULT_MAX_PROBES, DEFAULT_WINDOW

    if search not in (None, "batch", "frontier"):
        raise UsageError(f"search must be 'batch' or 'frontier', not {search!r}")
    frontier = None
    if search == "frontier":
        if measure:
            raise UsageError("measure ranks a sweep of fixed batches; it does not go with "
                             "search='frontier'")
        frontier = FrontierOptions(capacity=capacity, names=_names(names),
                                   choices=_names(choices))
        policies, search_batch = "full", False
    elif names is not None or choices is not None or capacity is not None:
        raise UsageError("capacity, names and choices go with search='frontier'")
    search_batch = search_batch or search == "batch"
    if measure and search_batch:
        raise UsageError("measure ranks a sweep of fixed batches; it does not go with a batch "
                         "search")
    if not isinstance(policies, str):
        policies = ",".join(policies)
    parsed = _as_target(target)
    source = step if step is not None else (None if isinstance(model, str) else model)
    if source is not None:
        config = _step_config(source, config, **overrides)
        model = config.factory
        variants = _step_variants(config, policies, parsed.spec)
    else:
        assert isinstance(model, str)
        config = config or preset_config(model, **overrides)
        assert not isinstance(config, StepConfig)
        variants = parse_variants(policies, config)
    return SweepRequest(
        model=model, base=config, variants=tuple(variants), target=parsed.spec, jobs=jobs,
        search_batch=search_batch, flags=_compile_flags(xla_flags),
        max_batch=max_batch, cache_root=None if cache is None else Path(cache),
        out_dir=None if output is None else Path(output), timeout=timeout, grid=grid,
        executor=executor or ExecutorSpec(),
        retries=DEFAULT_RETRIES if retries is None else retries,
        search_window=DEFAULT_WINDOW if search_window is None else search_window,
        max_probes=DEFAULT_MAX_PROBES if max_probes is None else max_probes,
        frontier=frontier, measure=measure, measure_steps=measure_steps)


def _names(given: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """A comma-separated list or a sequence as a tuple (checked by the frontier search)."""
    if given is None:
        return None
    items = given.split(",") if isinstance(given, str) else given
    return tuple(item.strip() for item in items)


def policies(model: str = "tiny", target: TargetLike | None = None,
             config: TransformerConfig | None = None, **overrides: Any) -> NamedTensors:
    """The named tensors of a built-in model's block (what a `names:` policy chooses for),
    with their shape and bytes per layer on one device at the model's config (closed form;
    `target` gives the mesh, one device when None), and the remat policy families."""
    from hloscope.configs.mesh import plan_mesh
    from hloscope.configs.policies import named_tensors
    from hloscope.configs.presets import preset_config

    config = config or preset_config(model, **overrides)
    if target is None:
        return named_tensors(model, config, "one device", 1, 1)
    parsed = _as_target(target)
    plan = plan_mesh(config, parsed.num_slices, parsed.devices_per_slice)
    return named_tensors(model, config, parsed.spec, plan.batch_ways, plan.ici_tensor)


def _step_variants(config: StepConfig, policies: str, target: str) -> list[Variant]:
    """The variants of a user step; its per-tensor `names:` policies resolved against the names
    of the step traced for `target` (one child process, no compile; only when there are any),
    so that a name the step does not use is refused before anything compiles."""
    from hloscope.configs.step import parse_step_variants, resolved_step_variant
    from hloscope.configs.tensors import NAMED_PREFIX

    variants = parse_step_variants(policies, config.takes_layers)
    if not any(variant.name.startswith(NAMED_PREFIX) for variant in variants):
        return variants
    from hloscope.workloads.step_names import trace_step_names

    names = tuple(n.name for n in trace_step_names(config, target))
    return [resolved_step_variant(variant, names, config.factory) for variant in variants]


def step_policies(step: str | StepFactory, target: TargetLike = "cpu",
                  config: StepConfig | None = None, **overrides: Any) -> StepTensors:
    """The checkpoint names of a user's step (what its `names:` policies choose for), traced
    for `target` (no compile): per (name, source line) the traced shape, dtype and bytes of one
    call (global: the trace does not know the compile's sharding) and where it was named."""
    from hloscope.configs.step import StepTensorRow, StepTensors
    from hloscope.workloads.step_names import trace_step_names

    spec = _as_target(target).spec
    config = _step_config(step, config, **overrides)
    names = trace_step_names(config, spec)
    return StepTensors(config.factory, spec, tuple(
        StepTensorRow(n.name, n.shape, n.dtype, n.bytes, n.source) for n in names))


def _step_config(source: str | StepFactory, carrier: Any = None, **overrides: Any) -> StepConfig:
    """The StepConfig of a factory (pickled) or a `FILE.py:function` / `module:function`
    reference (imported here once, to see whether it takes `layers`), with `overrides`
    (batch, seq_len, compute_dtype, tensor_parallel, dcn_data_parallel, ici_fsdp_parallel)
    over the values a `carrier` StepConfig (the CLI's options) holds."""
    from hloscope.configs.step import StepConfig, file_hash, reference_source

    if isinstance(source, str):
        from hloscope.workloads.step import reference_takes_layers

        reference, path = reference_source(source)
        fields: dict[str, Any] = {"factory": reference, "source_hash": file_hash(path),
                                  "takes_layers": reference_takes_layers(reference)}
    else:
        from hloscope.workloads.step import step_source

        fields = step_source(source)
    if carrier is not None and not isinstance(carrier, StepConfig):
        raise UsageError("a user step takes no model config; give batch, seq_len, "
                         "compute_dtype or the mesh sizes instead")
    settable = {f.name for f in dataclasses.fields(StepConfig)} - set(fields) - {
        "payload", "remat", "remat_block", "remat_layers", "scan_layers"}
    unknown = sorted(set(overrides) - settable)
    if unknown:
        raise UsageError(f"{unknown[0]} is an option of the built-in model; a user step takes "
                         f"{', '.join(sorted(settable))}")
    given = {} if carrier is None else {name: getattr(carrier, name) for name in settable}
    values = {**given, **{k: v for k, v in overrides.items() if v is not None}}
    return StepConfig(**fields, **values)


def _compile_flags(xla_flags: Sequence[str]) -> Any:
    """The user's flags with the environment's LIBTPU_INIT_ARGS and XLA_FLAGS."""
    import os

    from hloscope.configs.flags import CompileFlags

    if isinstance(xla_flags, str):
        xla_flags = [xla_flags]
    return CompileFlags.gather(tuple(xla_flags), os.environ)


def report(*inputs: ModuleLike, output: str | Path | None = None, force: bool = False,
           title: str | None = None, module: str | None = None, capacity: int | None = None,
           top: int = 15, lenient: bool = False) -> str:
    """The self-contained HTML report of one or more modules, dump folders, build folders or a
    sweep folder (what `hloscope report` writes); written to `output` when given (an existing
    file only with `force`). `capacity` (bytes per device) judges fit; `lenient` skips the
    semantic checks of the inputs' HLO (as `load`'s). Returns the HTML."""
    from hloscope.formats.frontier import frontier_file, read_frontier
    from hloscope.reports.html_report import report_page
    from hloscope.reports.output import write_file
    from hloscope.reports.renderers.html_page import render_page

    if not inputs:
        raise UsageError("report needs at least one input")
    frontier = frontier_file(inputs[0]) if len(inputs) == 1 else None
    if frontier is not None:
        from hloscope.reports.html_report import frontier_page

        html = render_page(frontier_page(read_frontier(frontier).data, title))
    else:
        loaded = _report_inputs(list(inputs), module, capacity, lenient)
        html = render_page(report_page(loaded, title, top))
    if output is not None:
        write_file(output, html, force)
    return html


def _report_inputs(sources: list[Any], module: str | None = None,
                  capacity: int | None = None, lenient: bool = False) -> OverviewSet:
    """Every input of a report loaded and analysed: a sweep folder gives each variant's build
    (its sweep.json the verdict), anything else one program."""
    from hloscope.analyses.summary.overview import overview_set
    from hloscope.formats.sweep import SweepRecord, is_sweep_folder, read_sweep

    programs: list[tuple[str, Program]] = []
    notes: list[str] = []
    found: SweepRecord | None = None
    for source in sources:
        if is_sweep_folder(source):
            found = read_sweep(Path(source))
            for row in found.variants:
                folder = row.build_in(found.folder)
                if folder is None:
                    notes.append(f"{row.variant}: no compiled program ({row.status})")
                else:
                    programs.append((row.variant, load_program(folder, lenient=lenient)))
        else:
            program = as_program(source, module, lenient=lenient)
            programs.append((_label(program) if isinstance(source, str | Path)
                             else program.module.name, program))
    if not programs:
        raise InputError("no module to report on: " + "; ".join(notes or ["no input"]))
    return overview_set(programs, capacity, found, notes)


def _label(program: Program) -> str:
    """An input's name in reports: its file or folder name ("<text>" for HLO text)."""
    source = program.source
    if source.startswith("<"):
        return source
    return Path(source).name or source


def from_jax(fn: Any, *args: Any, target: str = "cpu", policy: Any = None,
             dump_dir: str | Path | None = None, **jit_kwargs: Any) -> HloModule:
    """Compiles `fn(*args)` for `target` and returns its optimized module (see
    `hloscope.workloads.capture.from_jax`)."""
    from hloscope.workloads.capture import from_jax as capture

    return capture(fn, *args, target=target, policy=policy, dump_dir=dump_dir, **jit_kwargs)
