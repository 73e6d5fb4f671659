"""What would make a config fit: remedies with a predicted peak and their extra cost.

Predictions start from the live set at the peak, split into model state M (weights, optimizer
state, gradients, inputs, outputs), saved activations S of L layers, and the rest R
(temporaries, collective buffers). They are live-peak figures scaled by the measured ratio of
XLA's allocation to the live peak, so they compare with the same figure the verdict uses.

- **remat policy p** (stronger than the current one): every layer keeps the closed-form bytes of
  p (`analytic.activation_bytes`); the rematerialised layer is recomputed just in time, so its
  backward holds R plus the largest residual it recomputes (the largest per-layer saved
  buffer):  M + L·a_p + R + largest.  Extra FLOPs: the forward matmuls p recomputes, per layer
  (full: all; save_named / offload_named: Q·Kᵀ and the MLP's input projections).
- **offload_named**: as save_named on the host; on the device L·(layer input) plus one layer's
  named activations in flight to or from the host.
- **micro-batches of B/k with gradient accumulation**: M + (S + R)/k + an fp32 gradient
  accumulator (4 bytes per parameter on the device). No extra FLOPs; k smaller steps.
- **FSDP over the data axis**: replicated weights and optimizer state (and their gradients)
  shrink to 1/N, plus one layer's gathered weights. No extra FLOPs; all-gathers and
  reduce-scatters of the weights each step.
"""
from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass

from hloscope.analyses.oom.analytic import DTYPE_BYTES, activation_bytes
from hloscope.analyses.oom.categories import (
    GRADIENTS,
    MODEL_STATE,
    SAVED_ACTIVATIONS,
    CategoryBytes,
    category_bytes,
)
from hloscope.analyses.oom.sharding import ShardingFindings
from hloscope.spec.config import TransformerConfig

REMAT_ORDER = {"none": 0, "dots_saveable": 1, "dots_with_no_batch_dims_saveable": 1,
               "save_named": 2, "offload_named": 3, "full": 4, "nothing_saveable": 4}
REMAT_REMEDIES = ("save_named", "offload_named", "full")
MICRO_BATCH_SPLITS = (2, 4, 8, 16)
ACCUMULATOR_BYTES = 4


@dataclass(frozen=True, slots=True)
class Remedy:
    name: str  # "remat:full", "micro-batch:2", "fsdp"
    change: str  # what to change, for humans
    predicted_bytes: int
    extra_flops: int
    extra_flops_fraction: float | None
    cost: str
    config: dict | None = None  # the remedied config's overrides (build remedies)
    compiled_bytes: int | None = None  # from a compiled variant (a sweep folder)
    compiled_fits: bool | None = None
    compiled_extra_flops: int | None = None
    fits: bool | None = None
    rank: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class PeakParts:
    """The live peak split for predictions (per device, live-peak bytes)."""

    model_state: int
    saved: int
    rest: int
    largest_saved_per_layer: int
    layers: int
    allocation_ratio: float  # XLA's allocation / live peak (1 without XLA's data)

    @classmethod
    def from_breakdown(cls, parts: list[CategoryBytes], largest: int, layers: int,
                       ratio: float) -> PeakParts:
        state = category_bytes(parts, *MODEL_STATE)
        saved = category_bytes(parts, SAVED_ACTIVATIONS)
        total = sum(p.bytes for p in parts)
        return cls(state, saved, total - state - saved, largest, max(layers, 1), ratio)

    def scaled(self, live: float) -> int:
        return round(live * self.allocation_ratio)


def remat_remedies(parts: PeakParts, config: TransformerConfig, batch: int,
                   step_flops: int | None) -> list[Remedy]:
    current = REMAT_ORDER.get(config.remat, 0)
    found = []
    for policy in REMAT_REMEDIES:
        if REMAT_ORDER[policy] <= current and config.remat != "none":
            continue
        kept = parts.layers * activation_bytes(config, batch, policy)
        live = parts.model_state + kept + parts.rest + parts.largest_saved_per_layer
        if policy == "offload_named":
            named = activation_bytes(config, batch, "save_named")
            live += named - activation_bytes(config, batch, "full")
        flops = parts.layers * recompute_flops(config, batch, policy)
        found.append(Remedy(
            f"remat:{policy}", f"remat policy {policy} (--policy {policy})",
            parts.scaled(live), flops, _fraction(flops, step_flops),
            _remat_cost(policy, config, batch, parts.layers), {"remat": policy}))
    return found


def _remat_cost(policy: str, config: TransformerConfig, batch: int, layers: int) -> str:
    if policy != "offload_named":
        return "recomputes forward work in the backward pass"
    named = activation_bytes(config, batch, "save_named") - activation_bytes(config, batch, "full")
    return (f"recomputes less; moves {2 * layers * named:,} bytes over the host link per step "
            "(out and back)")


def recompute_flops(config: TransformerConfig, batch: int, policy: str) -> int:
    """Forward FLOPs of one layer that `policy` recomputes in the backward pass."""
    b, s, h, f = batch, config.seq_len, config.d_model, config.d_ff
    kv = config.kv_heads * config.head_dim
    mlp_inputs = (2 if config.activation == "swiglu" else 1) * 2 * b * s * h * f
    scores = 2 * b * s * s * h
    if policy in ("full", "nothing_saveable"):
        projections = 2 * b * s * h * (2 * h + 2 * kv) + 2 * b * s * f * h
        return projections + mlp_inputs + 2 * scores
    return scores + mlp_inputs


def micro_batch_remedy(parts: PeakParts, config: TransformerConfig, capacity: int | None,
                       parameters_per_device: int, data: int) -> Remedy | None:
    """The fewest micro-batches (of a batch the data axis still splits) predicted to fit."""
    for split in MICRO_BATCH_SPLITS:
        if config.batch % (split * data):
            break
        accumulator = ACCUMULATOR_BYTES * parameters_per_device
        live = parts.model_state + (parts.saved + parts.rest) / split + accumulator
        predicted = parts.scaled(live)
        if capacity is None or predicted <= capacity or split == MICRO_BATCH_SPLITS[-1]:
            return Remedy(
                f"micro-batch:{split}",
                f"{split} micro-batches of {config.batch // split} with gradient accumulation",
                predicted, 0, 0.0,
                f"{split} smaller steps per update; an fp32 accumulator of "
                f"{accumulator:,} bytes", {"batch": config.batch // split})
    return None


def fsdp_remedy(parts: PeakParts, sharding: ShardingFindings, live_gradients: int,
                layers: int, config: TransformerConfig | None) -> Remedy | None:
    ways = sharding.partitions // (config.tensor_parallel if config else 1)
    if ways < 2 or sharding.replicated_state_bytes == 0:
        return None
    freed = sharding.savings_if_sharded(ways) + live_gradients - live_gradients // ways
    weights = sharding.replicated_state_bytes
    if config is not None:
        weights = weights * DTYPE_BYTES[config.param_dtype] // (
            DTYPE_BYTES[config.param_dtype] + 12)
    gathered = weights // max(layers, 1)
    live = parts.model_state + parts.saved + parts.rest - freed + gathered
    return Remedy("fsdp", f"shard weights and optimizer state {ways} ways (--fsdp)",
                  parts.scaled(live), 0, 0.0,
                  "all-gathers the weights and reduce-scatters the gradients each step",
                  {"fsdp": True})


def rank_remedies(remedies: list[Remedy], capacity: int | None) -> list[Remedy]:
    """Fitting remedies first, then by extra FLOPs, then by predicted peak; numbered."""
    judged = [dataclasses.replace(r, fits=None if capacity is None
                                  else _best(r) <= capacity) for r in remedies]
    ordered = sorted(judged, key=lambda r: (r.fits is False, r.extra_flops_fraction or 0.0,
                                            _best(r)))
    return [dataclasses.replace(r, rank=n) for n, r in enumerate(ordered, start=1)]


def _best(remedy: Remedy) -> int:
    """The compiled figure when there is one, else the prediction."""
    return remedy.compiled_bytes if remedy.compiled_bytes is not None else remedy.predicted_bytes


def _fraction(flops: int, step_flops: int | None) -> float | None:
    return flops / step_flops if step_flops else None


def gradient_bytes(parts: list[CategoryBytes]) -> int:
    return category_bytes(parts, GRADIENTS)
