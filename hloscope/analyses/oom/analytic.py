"""Closed forms for the built-in transformer: activation bytes per layer and state bytes per
parameter, to set beside what the compiled program holds.

Activations are what JAX saves for one block's backward pass, per device (b local sequences of s
tokens, width h, a query heads, kv = kv_heads * head_dim, MLP width f), 16-bit compute with fp32
norms and softmax, no dropout; GPT and Llama blocks give the same count, and each remat policy
(and llm.c's `recompute:R` levels) keeps its own subset. The loss head's saved bytes are
`loss_saved_bytes` / `loss_chunk_bytes`. Model state is 16 B per parameter with the built-in
AdamW. FSDP shards inside one slice only (the `fsdp` mesh axis is ICI), so `fsdp_ways` is a
slice's devices over tensor parallelism on a multislice target.
Term-by-term derivation: see docs/oom.md, 'The analytic view' (policies' subsets: 'Remedies
and their predictions').
"""
from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass

from hloscope.configs.config import (
    RECOMPUTE_LEVELS,
    RECOMPUTE_POLICIES,
    TransformerConfig,
)
from hloscope.configs.mesh import plan_mesh
from hloscope.errors import UsageError

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
ZERO_TEXTBOOK_BYTES_PER_PARAM = 16  # Rajbhandari et al.: fp16 params + grads, fp32 Adam states
KORTHIKANTI_CONSTANT = 34
KORTHIKANTI_ATTENTION = 5
CHECKPOINT_POLICIES = ("full", "nothing_saveable", "offload_named")
HOST_CARRY_POLICIES = ("offload_carries", "offload_scan")
CLOSED_FORM_POLICIES = ("none", "save_named", "dots_with_no_batch_dims_saveable",
                        *CHECKPOINT_POLICIES, *HOST_CARRY_POLICIES, *RECOMPUTE_POLICIES)
RECOMPUTE_SAVED_NAMES = ("norm1", "norm2", "attn_out")
"""The named activations (beyond the projections) a recompute level saves unless it
recomputes them: each one [b, s, h] in the compute dtype."""


@dataclass(frozen=True, slots=True)
class StateBytes:
    """Bytes per parameter of the model state (AdamW as the built-in step runs it)."""

    parameter: int
    master: int
    moments: int
    gradient: int

    @property
    def optimizer(self) -> int:
        return self.master + self.moments

    @property
    def total(self) -> int:
        return self.parameter + self.optimizer + self.gradient

    def to_dict(self) -> dict:
        return {**asdict(self), "optimizer": self.optimizer, "total": self.total,
                "zero_textbook": ZERO_TEXTBOOK_BYTES_PER_PARAM}


def state_bytes_per_parameter(config: TransformerConfig) -> StateBytes:
    width = DTYPE_BYTES[config.param_dtype]
    master = 0 if config.param_dtype == "float32" else 4
    return StateBytes(parameter=width, master=master, moments=8, gradient=width)


def local_batch(config: TransformerConfig, devices: int) -> int:
    """Sequences per device: the batch is split over the data axis."""
    data = max(devices // config.tensor_parallel, 1)
    return max(config.batch // data, 1)


def attention_saved_bytes(config: TransformerConfig, batch: int) -> int:
    """The attention terms of `activation_bytes_none` (16-bit compute): plain attention's
    per-score bytes, or blockwise attention's output copy and log-sum-exp."""
    b, s, h, a = batch, config.seq_len, config.d_model, config.n_heads
    if config.attention == "plain":
        return 11 * b * a * s * s + 8 * b * a * s
    return 2 * b * s * h + 4 * b * a * s


def activation_bytes_none(config: TransformerConfig, batch: int) -> int:
    """Bytes JAX saves for one block's backward pass without remat (formula above)."""
    b, s, h, f = batch, config.seq_len, config.d_model, config.d_ff
    kv = config.kv_heads * config.head_dim
    total = 32 * b * s * h + 4 * b * s * kv + 12 * b * s * f + 16 * b * s
    total += attention_saved_bytes(config, batch)
    if config.positions == "rotary":
        total += 8 * s * config.head_dim
    return total


def activation_bytes(config: TransformerConfig, batch: int, policy: str) -> int:
    """Bytes one layer keeps on the device between its forward and backward pass."""
    b, s, h, f = batch, config.seq_len, config.d_model, config.d_ff
    kv = config.kv_heads * config.head_dim
    width = DTYPE_BYTES[config.compute_dtype]
    if policy == "none":
        return activation_bytes_none(config, batch) * width // 2
    if policy in HOST_CARRY_POLICIES:
        return 0
    layer_input = width * b * s * h
    if policy in CHECKPOINT_POLICIES:
        return layer_input
    if policy == "save_named":
        return layer_input + width * b * s * (2 * h + 2 * kv + f)
    if policy == "dots_with_no_batch_dims_saveable":
        inputs = 2 if config.activation == "swiglu" else 1
        return layer_input + width * b * s * (2 * h + 2 * kv + inputs * f)
    if policy in RECOMPUTE_POLICIES:
        recomputed = RECOMPUTE_LEVELS[int(policy.partition(":")[2])]
        kept = [name for name in RECOMPUTE_SAVED_NAMES if name not in recomputed]
        dots = activation_bytes(config, batch, "dots_with_no_batch_dims_saveable")
        return dots + len(kept) * width * b * s * h
    raise ValueError(f"no closed form for policy {policy!r}")


def layer_matrix_bytes(config: TransformerConfig, shards: int) -> int:
    """One layer's parameter matrices in the parameter dtype, per device over `shards` ways:
    what `offload_scan` moves to the host per layer (its vectors stay on the device)."""
    h, f, kv = config.d_model, config.d_ff, config.kv_heads * config.head_dim
    mlp = (3 if config.activation == "swiglu" else 2) * h * f
    matrices = 2 * h * h + 2 * h * kv + mlp
    return DTYPE_BYTES[config.param_dtype] * matrices // max(shards, 1)


def optimizer_bytes(config: TransformerConfig, parameters_per_device: int) -> int:
    """The optimizer state one device holds: fp32 master (with 16-bit parameters) and the two
    AdamW moments, 12 B (fp32 parameters: 8 B) per parameter it holds."""
    return state_bytes_per_parameter(config).optimizer * parameters_per_device


def nested_saved_bytes(config: TransformerConfig, batch: int, block: int) -> int:
    """What `nested:B` keeps on the device at its peak, all layers together: the outer scan's
    L/B block inputs plus the B layer inputs the inner scan saves while one block of layers is
    recomputed for its backward pass, (L/B + B)·x with x a layer input."""
    return (config.n_layers // block + block) * activation_bytes(config, batch, "full")


def loss_saved_bytes(config: TransformerConfig, batch: int) -> int:
    """Bytes the loss head keeps for the backward pass (plain: the fp32 softmax of the logits)."""
    b, s = batch, config.seq_len
    if config.loss == "plain":
        return 4 * b * s * config.vocab + 8 * b * s
    return DTYPE_BYTES[config.compute_dtype] * b * s * config.d_model + 4 * b * s


def loss_chunk_bytes(config: TransformerConfig, batch: int) -> int:
    """The logits the loss holds at once: all of them (16-bit and fp32) or one chunk's."""
    positions = config.seq_len if config.loss == "plain" else config.loss_chunk_size
    return (DTYPE_BYTES[config.compute_dtype] + 4) * batch * positions * config.vocab


def fsdp_ways(config: TransformerConfig, devices: int, num_slices: int = 1) -> int:
    """How many ways FSDP shards the weights: the slice's devices FSDP runs over (the whole
    single-axis `data` axis on one slice; the ICI `fsdp` axis on several), as if `fsdp` were
    on. Falls back to every device over tensor parallelism when the mesh cannot be planned."""
    slices = max(num_slices, 1)
    try:
        plan = plan_mesh(dataclasses.replace(config, fsdp=True), slices,
                         max(devices // slices, 1))
    except UsageError:
        return max(devices // (slices * config.tensor_parallel), 1)
    return plan.ici_fsdp if plan.hybrid else plan.ici_data


def parameters_per_device(config: TransformerConfig, parameters: int, devices: int,
                          num_slices: int = 1) -> int:
    """Parameters (and so the fp32 gradient accumulator, sharded like them) per device."""
    ways = config.tensor_parallel
    if config.fsdp:
        ways *= fsdp_ways(config, devices, num_slices)
    return parameters // max(ways, 1)


def korthikanti_bytes(config: TransformerConfig, batch: int) -> int:
    """s·b·h·(34 + 5·a·s/h): the textbook per-layer figure (16-bit, MHA, GELU, dropout)."""
    s, h, a = config.seq_len, config.d_model, config.n_heads
    return s * batch * h * KORTHIKANTI_CONSTANT + KORTHIKANTI_ATTENTION * a * s * s * batch


@dataclass(frozen=True, slots=True)
class AnalyticView:
    layers: int
    local_batch: int
    per_layer_bytes: int  # closed form for the config's own policy
    per_layer_none_bytes: int
    korthikanti_bytes: int
    state: StateBytes
    parameters: int
    attention: str = "plain"
    loss: str = "plain"
    loss_saved_bytes: int = 0  # the loss head's saved bytes (plain: fp32 softmax of logits)
    loss_chunk_bytes: int = 0  # the logits held at once

    def to_dict(self) -> dict:
        return {**asdict(self), "state": self.state.to_dict(),
                "activation_bytes": self.per_layer_bytes * self.layers,
                "state_bytes": self.state.total * self.parameters}


def analytic_view(config: TransformerConfig, devices: int, parameters: int) -> AnalyticView:
    """Closed forms at one micro-batch of the per-device batch (the whole of it without
    gradient accumulation): what one pass of the layers saves."""
    batch = local_batch(config, devices) // max(config.micro_batches, 1)
    policy = config.remat if config.remat in CLOSED_FORM_POLICIES else "full"
    return AnalyticView(
        layers=config.n_layers, local_batch=batch,
        per_layer_bytes=activation_bytes(config, batch, policy),
        per_layer_none_bytes=activation_bytes(config, batch, "none"),
        korthikanti_bytes=korthikanti_bytes(config, batch),
        state=state_bytes_per_parameter(config), parameters=parameters,
        attention=config.attention, loss=config.loss,
        loss_saved_bytes=loss_saved_bytes(config, batch),
        loss_chunk_bytes=loss_chunk_bytes(config, batch))
