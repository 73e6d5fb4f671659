"""Runs `--search frontier` (`frontier.py`) on a sweep request: each round's compiles are a
one-batch sweep of the round's policies through `core.run_sweep` (the same executor, cache and
build folders as any sweep; no jax)."""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

from hloscope.analyses.oom.categories import INPUTS, MODEL_STATE, breakdown, category_bytes
from hloscope.analyses.predict.baseline import Baseline, remat_percent_flag
from hloscope.devices import memory_budget
from hloscope.errors import UsageError
from hloscope.spec.policies import parse_variant
from hloscope.spec.targets import parse_target
from hloscope.sweeps.core import SweepRequest, run_sweep, validate
from hloscope.sweeps.frontier import (
    FrontierResult,
    FrontierSearch,
    frontier_names,
    policy_space,
    restrict,
)
from hloscope.sweeps.grid import Grid
from hloscope.workloads.build import prepare_folder

BASELINE_POLICIES = ("full", "names:*=remat")
"""The same program (tests/workloads/test_named_policies.py): nothing named is kept."""
FRONTIER_FILE = "frontier.json"


def frontier_capacity(request: SweepRequest, capacity: int | None) -> int:
    """`capacity` (--capacity), else the target device's memory budget."""
    found = capacity if capacity is not None else memory_budget(parse_target(request.target).device)
    if found is None:
        raise UsageError(f"--search frontier needs a memory capacity; {request.target} has "
                         "none: pass --capacity SIZE")
    return found


def run_frontier(request: SweepRequest, capacity: int | None = None,
                 force: bool = False, names: str | Sequence[str] | None = None,
                 choices: str | Sequence[str] | None = None) -> FrontierResult:
    """The frontier of `request`'s grid (one sequence length; its batches), varying `names`
    over `choices` (default: every residual name, every choice; the others recomputed)."""
    block = frontier_names(request.base)
    names, choices = restrict(block, names, choices)
    limit = frontier_capacity(request, capacity)
    grid = request.sweep_grid
    if len(grid.seq_lens) != 1:
        raise UsageError("--search frontier takes one --seq")
    validate(dataclasses.replace(request, grid=grid))
    if request.out_dir is not None:
        prepare_folder(request.out_dir, force)
    rounds = iter(range(1, 1 << 20))

    def compile_batch(policies: list[str], batch: int):
        out = None if request.out_dir is None else \
            request.out_dir / f"batch{batch}-round{next(rounds)}"
        sub = dataclasses.replace(
            request, variants=tuple(parse_variant(p, request.base) for p in policies),
            grid=Grid(grid.seq_lens, (batch,)), search_batch=False, out_dir=out)
        result = run_sweep(sub)
        built = {o.case.variant.name: (o.figures.required_bytes if o.figures.status == "ok"
                                       else None, o.folder, _step_seconds(o.figures))
                 for o in result.outcomes}
        return built, result.compiles + result.cache_hits

    space = policy_space(names, block, choices)
    result = FrontierSearch(compile_batch, baseline_from_build, space, grid.batches, limit,
                            names).run()
    result = dataclasses.replace(result, choices=choices)
    if request.out_dir is not None:
        (Path(request.out_dir) / FRONTIER_FILE).write_text(
            json.dumps(result.to_dict(), indent=1) + "\n")
    return result


def _step_seconds(figures) -> float | None:
    return figures.step.overlapped_seconds if figures.step is not None else None


def baseline_from_build(folder: Path) -> Baseline:
    """The baseline figures of a `hloscope build` folder of a `full` policy."""
    from hloscope.analyses.cost.flops import flops
    from hloscope.analyses.memory.analysis import memory
    from hloscope.formats.build import read_build
    from hloscope.loader.build import load_build

    build = read_build(Path(folder))
    if build.variant not in BASELINE_POLICIES:
        raise UsageError(f"a baseline is a `full` build; {folder} is {build.variant!r}")
    loaded = load_build(build)
    if loaded.module is None or build.result.memory is None:
        raise UsageError(f"{folder} has no optimized HLO or memory figures to predict from")
    backend = parse_target(build.target).backend
    live = memory(loaded.module, backend=backend)
    parts = breakdown(live.live_at_peak, backend)
    fixed = category_bytes(parts, *(MODEL_STATE - {INPUTS}))
    cost = flops(loaded.module).total
    allocation = loaded.reported_device_bytes
    source = "XLA memory-usage report (default memory space)"
    if allocation is None:
        allocation, source = build.result.memory.allocated_bytes, "memory_analysis allocation"
    figures = build.result.memory
    span = live.layer_span
    return Baseline(build.manifest.get("model", ""), build.target, build.variant,
                    build.config.to_dict(), allocation, loaded.reported_host_bytes or 0, fixed,
                    int(cost.flops), int(cost.bytes_accessed), int(cost.collective_bytes), source,
                    unaliased_argument_bytes=figures.argument_bytes - figures.alias_bytes,
                    program_bytes=figures.generated_code_bytes, live_peak_bytes=live.peak_bytes,
                    layer_span_peak_bytes=span.peak_bytes if span else 0,
                    outside_span_peak_bytes=span.outside_peak_bytes if span else 0,
                    deferred_bytes=span.deferred_bytes if span else 0,
                    backward_loop_peak_bytes=span.last_loop_peak_bytes if span else 0,
                    remat_percent=remat_percent_flag(build.manifest.get("flags") or {}))
