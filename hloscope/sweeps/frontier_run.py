"""Runs `--search frontier` (`frontier.py`) on a sweep request: each round's compiles are a
one-batch sweep of the round's policies through `core.run_sweep` (the same executor, cache and
build folders as any sweep; no jax).

On a user's step (`--step`) the names are the traced step's (`workloads.step_names`, a child
process) and their costs are measured before the search: `full` and `names:NAME=device` for
each name at the grid's smallest batch (`analyses/predict/measured.py`; those compiles are the
search's first, counted in `compiles`); the predictor is then `StepPredictor`. A name that adds
nothing to the forward loop's stacks is not a residual of the backward pass (it is the block's
output, say): its three choices compile the same program, so it is left recomputed."""
from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable, Sequence
from pathlib import Path

from hloscope.analyses.oom.categories import INPUTS, MODEL_STATE, breakdown, category_bytes
from hloscope.analyses.predict.baseline import Baseline, remat_percent_flag
from hloscope.analyses.predict.measured import MeasuredBlock, measure_program, name_cost
from hloscope.analyses.predict.model import Predictor
from hloscope.analyses.predict.scaled_step import BaselineStep, baseline_step
from hloscope.analyses.predict.step_model import StepPredictor
from hloscope.configs.policies import Variant, parse_variant
from hloscope.configs.step import StepConfig, parse_step_variants, resolved_step_variant
from hloscope.configs.targets import parse_target
from hloscope.configs.tensors import encode_named
from hloscope.devices import memory_budget
from hloscope.errors import HloscopeError, UsageError
from hloscope.formats.frontier import write_frontier
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
    over `choices` (default: every residual name, every choice; the others recomputed); of a
    user's step when `request.base` is a StepConfig."""
    step = request.base if isinstance(request.base, StepConfig) else None
    grid = request.sweep_grid
    if len(grid.seq_lens) != 1:
        raise UsageError("--search frontier takes one --seq")
    if step is not None and (grid.seq_lens[0] <= 0 or min(grid.batches) <= 0):
        raise UsageError("--search frontier on a user's step needs --batch and --seq: what "
                         "each name costs is measured per token and scaled with the batch")
    limit = frontier_capacity(request, capacity)
    block = _step_block(step, request.target) if step else frontier_names(request.base)
    names, choices = restrict(block, names, choices)
    validate(dataclasses.replace(request, grid=grid))
    if request.out_dir is not None:
        prepare_folder(request.out_dir, force)
    compile_batch = _BatchCompiler(request, block)
    predictor_of: Callable[[tuple[Baseline, ...]], Predictor] = Predictor
    measured = None
    if step is not None:
        measured = measure_names(compile_batch, names, block, min(grid.batches),
                                 grid.seq_lens[0])
        names = tuple(n.name for n in measured.names if n.bytes_per_token > 0)
        if not names:
            raise UsageError(f"{step.factory}: keeping any of its names adds nothing to the "
                             "forward loop's stacks; no per-tensor policy differs from `full`")
        predictor_of = functools.partial(StepPredictor, block=measured)
    space = policy_space(names, block, choices)
    result = FrontierSearch(compile_batch, baseline_from_build, space, grid.batches, limit,
                            names, predictor_of, compile_batch.known,
                            loss_order_of=read_loss_order).run()
    result = dataclasses.replace(result, choices=choices, compiles=compile_batch.compiles,
                                 measured=measured.to_dict() if measured else None)
    if request.out_dir is not None:
        write_frontier(Path(request.out_dir), result.to_dict())
    return result


def _step_block(step: StepConfig, target: str) -> tuple[str, ...]:
    from hloscope.workloads.step_names import trace_step_names

    names = tuple(dict.fromkeys(n.name for n in trace_step_names(step, target)))
    if not names:
        raise UsageError(f"{step.factory} names no tensors (no jax.ad_checkpoint."
                         "checkpoint_name in the traced step): --search frontier has nothing "
                         "to choose for")
    return names


class _BatchCompiler:
    """`FrontierSearch`'s `compile_batch`: one sweep of `policies` at one batch; a program
    compiled before in this search is not compiled (nor counted) again."""

    def __init__(self, request: SweepRequest, block: tuple[str, ...]) -> None:
        self.request = request
        self.block = block
        self.compiles = 0
        self.known: dict[tuple[str, int], tuple[int | None, str | None, float | None]] = {}
        self.rounds = itertools.count(1)

    def __call__(self, policies: list[str], batch: int) -> tuple[dict[str, tuple], int]:
        wanted = [p for p in dict.fromkeys(policies) if (p, batch) not in self.known]
        made = 0
        if wanted:
            request = self.request
            out = None if request.out_dir is None else \
                request.out_dir / f"batch{batch}-round{next(self.rounds)}"
            sub = dataclasses.replace(
                request, variants=tuple(self._variant(p) for p in wanted),
                grid=Grid(request.sweep_grid.seq_lens, (batch,)), search_batch=False,
                out_dir=out)
            result = run_sweep(sub)
            for o in result.outcomes:
                self.known[o.case.variant.name, batch] = (
                    o.figures.required_bytes if o.figures.status == "ok" else None, o.folder,
                    _step_seconds(o.figures))
            made = result.compiles + result.cache_hits
            self.compiles += made
        return {p: self.known[p, batch] for p in policies}, made

    def _variant(self, policy: str) -> Variant:
        base = self.request.base
        if not isinstance(base, StepConfig):
            return parse_variant(policy, base)
        variant = parse_step_variants(policy, base.takes_layers)[0]
        return resolved_step_variant(variant, self.block, base.factory)


def measure_names(compile_batch: _BatchCompiler, names: tuple[str, ...],
                  block: tuple[str, ...], batch: int, seq_len: int) -> MeasuredBlock:
    """Each of `names`' cost (`measured.py`) from `full` and `names:NAME=device` (the
    block's other names recomputed) at `batch`."""
    from hloscope.loader.build import load_build

    kept = {name: encode_named({name: "device"}, block) for name in names}
    built, _ = compile_batch([BASELINE_POLICIES[0], *kept.values()], batch)
    measures = {}
    for policy, (_, folder, _) in built.items():
        loaded = load_build(Path(folder)) if folder is not None else None
        if loaded is None or loaded.module is None:
            raise UsageError(f"measuring the step's names needs {policy!r} compiled at batch "
                             f"{batch}; it did not compile (pass a smaller --batch)")
        measures[policy] = measure_program(loaded.module)
    full = measures[BASELINE_POLICIES[0]]
    costs = tuple(name_cost(name, full, measures[policy], batch * seq_len)
                  for name, policy in kept.items())
    return MeasuredBlock(full.stack.layers, costs, batch, seq_len)


def _step_seconds(figures) -> float | None:
    """A compiled candidate's own step: the per-op model's where the device has a table."""
    return figures.step_seconds


def baseline_from_build(folder: Path) -> Baseline:
    """The baseline figures of a `hloscope build` folder of a `full` policy."""
    from hloscope.analyses.cost.flops import flops
    from hloscope.analyses.memory.analysis import memory
    from hloscope.analyses.summary.variant import collective_links, per_op_step
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
    timed = per_op_step(loaded, build.config.compute_dtype,
                        collective_links(loaded.module, build))
    step = baseline_step(timed) if timed is not None else None
    return Baseline(build.manifest.get("model", ""), build.target, build.variant,
                    build.config.to_dict(), allocation, loaded.reported_host_bytes or 0, fixed,
                    int(cost.flops), int(cost.bytes_accessed), int(cost.collective_bytes), source,
                    unaliased_argument_bytes=figures.argument_bytes - figures.alias_bytes,
                    program_bytes=figures.generated_code_bytes, live_peak_bytes=live.peak_bytes,
                    layer_span_peak_bytes=span.peak_bytes if span else 0,
                    outside_span_peak_bytes=span.outside_peak_bytes if span else 0,
                    deferred_bytes=span.deferred_bytes if span else 0,
                    backward_loop_peak_bytes=span.last_loop_peak_bytes if span else 0,
                    remat_percent=remat_percent_flag(build.manifest.get("flags") or {}),
                    **_step_fields(step))


def read_loss_order(folder: str | Path) -> str | None:
    """libtpu's loss order in a compiled build (`analyses.predict.loss_order`): AFTER or BEFORE;
    None where its dumps do not show it (no libtpu memory dumps, no f32 logits buffer, no entry
    while loops, not a transformer) or cannot be read."""
    try:
        return _compiled_loss_order(Path(folder))
    except HloscopeError:
        return None


def _compiled_loss_order(folder: Path) -> str | None:
    from hloscope.analyses.predict.baseline import mesh_ways
    from hloscope.analyses.predict.loss_order import loss_order
    from hloscope.configs.config import TransformerConfig
    from hloscope.configs.tensors import tokens_per_device
    from hloscope.formats.build import read_build
    from hloscope.loader.program import load_program

    build = read_build(folder)
    config = build.config
    dump = folder / "dump"
    if not isinstance(config, TransformerConfig) or not dump.is_dir():
        return None
    ways = mesh_ways(config, build.target)
    elements = tokens_per_device(config, ways.batch) * config.vocab // ways.tensor
    program = load_program(str(dump), lenient=True)
    if program.module is None:
        return None
    entry = {i.name for i in program.module.computations[program.module.entry_name].instructions}
    return loss_order(program.live_range, program.buffer_assignment, entry, elements)


def _step_fields(step: BaselineStep | None) -> dict[str, float]:
    if step is None:
        return {}
    return {"step_seconds": step.seconds, "step_exposed_seconds": step.exposed_seconds,
            "step_forward_seconds": step.forward_seconds,
            "step_backward_seconds": step.backward_seconds}
