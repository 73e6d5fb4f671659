"""What would make a config fit: remedies with a predicted peak and their extra cost.

The live set at the peak is split into model state M, saved activations S of L layers and the
rest R; each remedy (a stronger remat policy, nested:B, offload_named / offload_carries /
offload_scan, recompute:1/2, optimizer-offload, k micro-batches, FSDP over the data axis)
predicts a live peak from them (x one layer's 16-bit input, ℓ the largest per-layer saved buffer,
`largest_saved_per_layer`), scaled by the measured ratio of XLA's allocation to the live
peak so it compares with the verdict's figure, plus its extra FLOPs. Remedies that pin host
memory carry their pinned bytes per device and the host-fit check (`HostFit`): one whose host
cannot hold it does not fit. Each remedy's name is its sweep variant (`remat:nested:8`), so
`oom --sweep DIR` attaches the compiled figure and `prediction_error` (predicted / compiled - 1).
The formulas per remedy, and how they compare with compiled programs: see docs/oom.md,
'Remedies and their predictions'.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import asdict, dataclass

from hloscope.analyses.oom.analytic import (
    DTYPE_BYTES,
    activation_bytes,
    layer_matrix_bytes,
    nested_saved_bytes,
    optimizer_bytes,
    state_bytes_per_parameter,
)
from hloscope.analyses.oom.categories import (
    GRADIENTS,
    MODEL_STATE,
    SAVED_ACTIVATIONS,
    CategoryBytes,
    category_bytes,
)
from hloscope.analyses.oom.sharding import ShardingFindings
from hloscope.configs.config import TransformerConfig

REMAT_ORDER = {"none": 0, "dots_saveable": 1, "dots_with_no_batch_dims_saveable": 1,
               "recompute:1": 1, "recompute:2": 1, "save_named": 2, "offload_named": 3,
               "full": 4, "nothing_saveable": 4, "nested": 5, "offload_carries": 6,
               "offload_scan": 6}
"""How much a policy keeps on the device, strongest last: remedies weaker than the current
policy are not proposed."""
REMAT_REMEDIES = ("dots_with_no_batch_dims_saveable", "recompute:1", "recompute:2", "save_named",
                  "offload_named", "full", "offload_carries", "offload_scan")
OPTIMIZER_OFFLOAD = "optimizer-offload"
CARRIES_IN_FLIGHT = 2  # offload_carries: one layer input going out, one coming back
MICRO_BATCH_NEIGHBOURS = 1  # divisors listed either side of the smallest that fits
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
    host_bytes: int | None = None  # pinned host memory per device the remedy needs
    host_fits: bool | None = None  # the devices sharing a host fit its RAM (None: unknown)
    host_reason: str | None = None

    @property
    def prediction_error(self) -> float | None:
        """predicted / compiled - 1, when a compiled figure is attached."""
        if not self.compiled_bytes:
            return None
        return self.predicted_bytes / self.compiled_bytes - 1

    def to_dict(self) -> dict:
        return {**asdict(self), "prediction_error": self.prediction_error}


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


def current_strength(config: TransformerConfig) -> int:
    """REMAT_ORDER of the config's own policy (nested scan remat counted as `nested`)."""
    if config.remat_block:
        return REMAT_ORDER["nested"]
    return REMAT_ORDER.get(config.remat, 0)


def remat_remedies(parts: PeakParts, config: TransformerConfig, batch: int,
                   step_flops: int | None, shards: int = 1) -> list[Remedy]:
    """Stronger remat policies: jax's, llm.c's recompute levels, carry (and scan input)
    offload, and nested remat of blocks near √L. `shards`: the ways each parameter matrix is
    split (FSDP x tensor), for what offload_scan moves."""
    current = current_strength(config)
    found = []
    for policy in REMAT_REMEDIES:
        if REMAT_ORDER[policy] <= current and config.remat != "none":
            continue
        if policy == "offload_scan" and not config.scan_layers:
            continue
        live = parts.model_state + _kept(parts, config, batch, policy, shards) + parts.rest \
            + parts.largest_saved_per_layer
        flops = parts.layers * recompute_flops(config, batch, policy)
        host = _host_bytes(config, batch, policy, parts.layers, shards)
        found.append(Remedy(
            f"remat:{policy}", f"remat policy {policy} (--policy {policy})",
            parts.scaled(live), flops, _fraction(flops, step_flops),
            _remat_cost(policy, config, batch, parts.layers, host), {"remat": policy},
            host_bytes=host))
    if current < REMAT_ORDER["nested"] or config.remat == "none":
        found += [_nested_remedy(parts, config, batch, block, step_flops)
                  for block in nested_blocks(config.n_layers)]
    return found


def _kept(parts: PeakParts, config: TransformerConfig, batch: int, policy: str,
          shards: int = 1) -> int:
    """Device bytes the layers keep under `policy` (all layers, with what is in flight)."""
    if policy == "offload_carries":
        return CARRIES_IN_FLIGHT * activation_bytes(config, batch, "full")
    if policy == "offload_scan":
        return CARRIES_IN_FLIGHT * (activation_bytes(config, batch, "full")
                                    + layer_matrix_bytes(config, shards))
    kept = parts.layers * activation_bytes(config, batch, policy)
    if policy == "offload_named":
        kept += activation_bytes(config, batch, "save_named") \
            - activation_bytes(config, batch, "full")
    return kept


def nested_blocks(layers: int) -> list[int]:
    """Block sizes B for `nested:B`: the divisors of L strictly between 1 and L nearest √L
    (the nearest below and above, one when √L is a divisor)."""
    inner = [d for d in range(2, layers) if layers % d == 0]
    root = math.sqrt(layers)
    below = [d for d in inner if d <= root]
    above = [d for d in inner if d >= root]
    return sorted({*below[-1:], *above[:1]})


def _nested_remedy(parts: PeakParts, config: TransformerConfig, batch: int, block: int,
                   step_flops: int | None) -> Remedy:
    live = parts.model_state + nested_saved_bytes(config, batch, block) + parts.rest \
        + parts.largest_saved_per_layer
    flops = 2 * parts.layers * recompute_flops(config, batch, "full")
    name = f"nested:{block}"
    return Remedy(
        f"remat:{name}", f"checkpointing scan of {config.n_layers // block} blocks of {block} "
        f"layers (--policy {name})", parts.scaled(live), flops, _fraction(flops, step_flops),
        "recomputes every layer's forward twice (the inner scan, then the layer)",
        {"remat": name})


def _host_bytes(config: TransformerConfig, batch: int, policy: str, layers: int,
                shards: int) -> int | None:
    """Pinned host bytes per device a remat policy needs: L·x (and L·p for offload_scan)."""
    if policy == "offload_carries":
        return layers * activation_bytes(config, batch, "full")
    if policy == "offload_scan":
        return layers * (activation_bytes(config, batch, "full")
                         + layer_matrix_bytes(config, shards))
    return None


def _remat_cost(policy: str, config: TransformerConfig, batch: int, layers: int,
                host: int | None = None) -> str:
    if policy in ("offload_carries", "offload_scan"):
        what = "layer inputs" if policy == "offload_carries" else \
            "layer inputs and parameter matrices"
        return (f"recomputes forward work; moves {2 * (host or 0):,} bytes of {what} over the "
                f"host link per step (out and back) and holds {host or 0:,} in pinned host "
                "memory")
    if policy.startswith("recompute:"):
        return ("recomputes attention (Q·Kᵀ, P·V) and the "
                + ("MLP activation" if policy == "recompute:1" else "MLP activation and norms")
                + " in the backward pass")
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
    if policy in ("full", "nothing_saveable", "offload_carries", "offload_scan"):
        projections = 2 * b * s * h * (2 * h + 2 * kv) + 2 * b * s * f * h
        return projections + mlp_inputs + 2 * scores
    if policy in ("dots_with_no_batch_dims_saveable", "recompute:1", "recompute:2"):
        return 2 * scores
    return scores + mlp_inputs


def micro_batch_divisors(per_shard_batch: int, current: int = 1) -> list[int]:
    """Micro-batch counts k > `current` that split the per-shard batch and that `current`
    divides (so the step's own micro-batches split evenly): every divisor, not powers of 2."""
    return [k for k in range(current + 1, per_shard_batch + 1)
            if per_shard_batch % k == 0 and k % current == 0]


def micro_batch_remedies(parts: PeakParts, config: TransformerConfig, capacity: int | None,
                         parameters_per_device: int, per_shard_batch: int) -> list[Remedy]:
    """The smallest micro-batch count predicted to fit, with its neighbouring divisors."""
    current = max(config.micro_batches, 1)
    counts = micro_batch_divisors(per_shard_batch, current)
    if not counts:
        return []
    accumulator = ACCUMULATOR_BYTES * parameters_per_device if current == 1 else 0
    predicted = {k: parts.scaled(parts.model_state + (parts.saved + parts.rest) * current / k
                                 + accumulator) for k in counts}
    fitting = [n for n, k in enumerate(counts) if capacity is None or predicted[k] <= capacity]
    pick = fitting[0] if fitting else len(counts) - 1
    chosen = counts[max(pick - MICRO_BATCH_NEIGHBOURS, 0): pick + MICRO_BATCH_NEIGHBOURS + 1]
    return [Remedy(
        f"micro-batch:{k}", f"{k} micro-batches of {per_shard_batch // k} sequences per shard "
        f"with gradient accumulation (--micro-batches {k})", predicted[k], 0, 0.0,
        f"{k} smaller passes per update; an fp32 accumulator of {accumulator:,} bytes "
        "(sharded like the parameters)", {"micro_batches": k}) for k in chosen]


def fsdp_remedy(parts: PeakParts, sharding: ShardingFindings, live_gradients: int,
                layers: int, config: TransformerConfig | None,
                ways: int | None = None) -> Remedy | None:
    """`ways`: the devices FSDP would shard over (`analytic.fsdp_ways`: one slice's on a
    multislice target); default every partition over tensor parallelism."""
    if ways is None:
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


def optimizer_offload_remedy(parts: PeakParts, config: TransformerConfig,
                             optimizer_live: int, parameters_per_device: int) -> Remedy | None:
    """Optimizer state in pinned host memory: the peak loses the optimizer state live there
    (`optimizer_live`, live-peak bytes), the update needs U = 16 B per parameter at once."""
    if config.optimizer_offload or optimizer_live <= 0:
        return None
    offloaded = optimizer_bytes(config, parameters_per_device)
    update = state_bytes_per_parameter(config).total * parameters_per_device
    live = max(parts.model_state + parts.saved + parts.rest - optimizer_live, update)
    return Remedy(
        OPTIMIZER_OFFLOAD, "fp32 master weights and AdamW moments in pinned host memory, moved "
        "to the device for the update (--optimizer-offload)", parts.scaled(live), 0, 0.0,
        f"moves {2 * offloaded:,} bytes over the host link per step (in for the update, out "
        f"after it); the update holds {update:,} bytes on the device at once; measured on "
        "libtpu 0.0.42.1 the copies to the device start with the program, and the device "
        "total did not drop (docs/oom.md): compile it before relying on this",
        {"optimizer_offload": True}, host_bytes=offloaded)


def rank_remedies(remedies: list[Remedy], capacity: int | None) -> list[Remedy]:
    """Fitting remedies first, then by extra FLOPs, then by predicted peak; numbered. A remedy
    whose host cannot hold what it pins does not fit."""
    judged = [dataclasses.replace(r, fits=False if r.host_fits is False else None
                                  if capacity is None else _best(r) <= capacity)
              for r in remedies]
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
