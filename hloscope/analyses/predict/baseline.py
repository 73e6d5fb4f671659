"""A compiled baseline: the figures of one `hloscope build` the predictor scales (no jax).

A baseline is a compiled `full` remat program (every named tensor recomputed) at one batch: its
allocation per memory space (XLA's memory-usage report of the main module: the default space is
what libtpu compares with the usable HBM; `memory_analysis()` otherwise), the part of it that
does not scale with the batch (the model state live at the peak: weights, optimizer state,
gradients, outputs and constants, from the live set `analyses/memory` finds at the peak, the
categories `analyses/oom/categories.py` names), the live peak inside the span of its layer loops
against the program's (`analyses/memory/layer_span.py`), and what the roofline step estimate reads
(hloscope's FLOPs and HBM bytes of the optimized HLO, collective and host-link bytes). It is
stored as a small JSON record (`to_dict`), so a predictor fixture needs no HLO; the sweeps
layer reads it from a build folder (`sweeps.frontier_run.baseline_from_build`).
"""
from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, fields
from typing import Any

from hloscope.analyses.predict.scaled_step import BaselineStep
from hloscope.configs.config import TransformerConfig
from hloscope.configs.flag_values import flag_value
from hloscope.configs.flags import CompileFlags
from hloscope.configs.mesh import plan_mesh
from hloscope.configs.step import is_step_config
from hloscope.configs.targets import Target, parse_target
from hloscope.configs.tensors import tokens_per_device


@dataclass(frozen=True)
class Baseline:
    model: str
    target: str
    variant: str
    config: dict[str, Any]  # TransformerConfig.to_dict()
    allocation_bytes: int  # default memory space, per device
    host_bytes: int  # pinned host memory space, per device (0 when none)
    fixed_bytes: int  # model state live at the peak: does not scale with the batch
    flops: int  # hloscope's FLOPs of the step, per device
    hbm_bytes: int  # hloscope's bytes accessed, per device
    collective_bytes: int
    source: str  # where allocation_bytes comes from
    unaliased_argument_bytes: int = 0  # arguments not aliased with an output (the batch)
    program_bytes: int = 0  # XLA's generated code (libtpu's program overlays live in HBM)
    live_peak_bytes: int = 0  # hloscope's live peak of the program (0: not measured)
    layer_span_peak_bytes: int = 0  # its live peak from the first layer loop to the last
    outside_span_peak_bytes: int = 0  # its live peak before the first or after the last
    deferred_bytes: int = 0  # made between the layer loops and held through the last one
    backward_loop_peak_bytes: int = 0  # its live peak inside the last layer loop (0: not measured)
    remat_percent: int | None = None  # libtpu's remat limit flag where the build set it
    # its per-op step (`analyses.steptime`; 0: the device has no calibration, or not measured)
    step_seconds: float = 0.0
    step_exposed_seconds: float = 0.0  # of it, the compute stream's waits on links
    step_forward_seconds: float = 0.0  # compute-stream time in the forward phase
    step_backward_seconds: float = 0.0  # in the backward and recompute phases

    @property
    def step(self) -> BaselineStep | None:
        """Its per-op step as `scaled_step` scales it; None when not measured."""
        if not self.step_seconds:
            return None
        return BaselineStep(self.step_seconds, self.step_exposed_seconds,
                            self.step_forward_seconds, self.step_backward_seconds)

    @functools.cached_property
    def parsed_target(self) -> Target:
        return parse_target(self.target)

    @functools.cached_property
    def transformer(self) -> TransformerConfig:
        return TransformerConfig.from_dict(self.config)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Baseline:
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


@dataclass(frozen=True)
class MeshWays:
    batch: int
    tensor: int


def mesh_ways(config: TransformerConfig, target: str | Target) -> MeshWays:
    """The batch and tensor shards of `config` on `target`'s mesh (`spec.mesh`)."""
    parsed = parse_target(target) if isinstance(target, str) else target
    plan = plan_mesh(config, parsed.num_slices, parsed.devices_per_slice)
    return MeshWays(plan.batch_ways, plan.ici_tensor)


REMAT_PERCENT_FLAG = "--xla_jf_rematerialization_percent_shared_memory_limit"


def remat_percent_flag(flags: dict[str, Any]) -> int | None:
    """The percent a build's flags (its manifest's `flags`: the user's list, the environment's
    variables) give libtpu's rematerialization limit; None where they leave libtpu's default."""
    value = flag_value(CompileFlags.from_dict(flags), REMAT_PERCENT_FLAG)
    return int(value) if value is not None and value.strip().isdigit() else None


def layer_span_headroom(baseline: Baseline) -> int:
    """How far the baseline's live peak is above its peak inside the layer loops' span (0 when
    not measured, or when its peak is inside the span)."""
    if not baseline.layer_span_peak_bytes:
        return 0
    return max(0, baseline.live_peak_bytes - baseline.layer_span_peak_bytes)


def peak_above_backward_loop(baseline: Baseline) -> int:
    """How far the baseline's live peak is above its peak inside the backward layer loop (0 when
    not measured, or when its peak is in that loop)."""
    if not baseline.backward_loop_peak_bytes:
        return 0
    return max(0, baseline.live_peak_bytes - baseline.backward_loop_peak_bytes)


def peak_above_outside(baseline: Baseline) -> int:
    """How far the baseline's live peak is above its peak outside the layer loops' span (0
    when not measured, or when its peak is outside)."""
    if not baseline.outside_span_peak_bytes:
        return 0
    return max(0, baseline.live_peak_bytes - baseline.outside_span_peak_bytes)


def baseline_tokens(baseline: Baseline) -> int:
    """Tokens of one micro-batch on one device; of the step (batch × sequence) for a user's
    step, whose sharding only its compile knows (`measured.py`'s per-token figures alike)."""
    if is_step_config(baseline.config):
        step = baseline.config["step"]
        return step["batch"] * step["seq_len"]
    config = baseline.transformer
    return tokens_per_device(config, mesh_ways(config, baseline.parsed_target).batch)



def baseline_batch(baseline: Baseline) -> int:
    """The batch the baseline was compiled at (the grid's: global)."""
    config = baseline.config
    return (config["step"] if is_step_config(config) else config)["batch"]
