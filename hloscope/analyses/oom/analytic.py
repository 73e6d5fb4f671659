"""Closed forms for the built-in transformer: activation bytes per layer and state bytes per
parameter, to set beside what the compiled program holds (derivation: docs/oom.md).

Activations JAX saves for the backward pass of one block, per device (b local sequences of s
tokens, width h, a query heads, key/value width kv = kv_heads * head_dim, MLP width f), with
16-bit compute, fp32 norms and softmax, no dropout; GPT (LayerNorm, MHA, GELU) and Llama
(RMSNorm, GQA, RoPE, SwiGLU) blocks give the same count:

    none:  32·b·s·h + 4·b·s·kv + 12·b·s·f + 11·b·a·s² + 16·b·s + 8·b·a·s  (+ 8·s·head_dim RoPE)

(two norms 2 x (12bsh + 8bs + 2bsh); Q, K, V 2bsh + 4bs·kv; mask 1, masked scores 4, exp 4,
probabilities 2 bytes per score and two fp32 row statistics; attention output 2bsh; six [b,s,f]
16-bit tensors in either MLP). Under `jax.checkpoint` a layer keeps its 16-bit input (2bsh;
`full`, `nothing_saveable`, and `offload_named` on the device), plus with `save_named` the named
Q/K/V projections (2bsh + 4bs·kv), attention output (2bsh) and MLP hidden activation (2bsf).
Korthikanti et al.'s s·b·h·(34 + 5·a·s/h) counts 16-bit multi-head attention with dropout
masks and a GELU MLP of 4h.

Model state per parameter with the built-in AdamW: 16-bit parameters (2 B), fp32 master
weights, first and second moments (12 B), and 16-bit gradients (2 B) while they live: 16 B — the
ZeRO paper's figure, with the fp16 copy counted as the parameter itself. fp32 parameters need no
master copy: 4 + 8 + 4 = 16 B as well, with 4-byte gradients.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from hloscope.spec.config import TransformerConfig

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
ZERO_TEXTBOOK_BYTES_PER_PARAM = 16  # Rajbhandari et al.: fp16 params + grads, fp32 Adam states
KORTHIKANTI_CONSTANT = 34
KORTHIKANTI_ATTENTION = 5
CHECKPOINT_POLICIES = ("full", "nothing_saveable", "offload_named")


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


def activation_bytes_none(config: TransformerConfig, batch: int) -> int:
    """Bytes JAX saves for one block's backward pass without remat (formula above)."""
    b, s, h, f, a = batch, config.seq_len, config.d_model, config.d_ff, config.n_heads
    kv = config.kv_heads * config.head_dim
    total = 32 * b * s * h + 4 * b * s * kv + 12 * b * s * f + 11 * b * a * s * s
    total += 16 * b * s + 8 * b * a * s
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
    layer_input = width * b * s * h
    if policy in CHECKPOINT_POLICIES:
        return layer_input
    if policy == "save_named":
        return layer_input + width * b * s * (2 * h + 2 * kv + f) // 1
    raise ValueError(f"no closed form for policy {policy!r}")


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

    def to_dict(self) -> dict:
        return {**asdict(self), "state": self.state.to_dict(),
                "activation_bytes": self.per_layer_bytes * self.layers,
                "state_bytes": self.state.total * self.parameters}


def analytic_view(config: TransformerConfig, devices: int, parameters: int) -> AnalyticView:
    batch = local_batch(config, devices)
    policy = config.remat if config.remat in ("none", "save_named", *CHECKPOINT_POLICIES) \
        else "full"
    return AnalyticView(
        layers=config.n_layers, local_batch=batch,
        per_layer_bytes=activation_bytes(config, batch, policy),
        per_layer_none_bytes=activation_bytes(config, batch, "none"),
        korthikanti_bytes=korthikanti_bytes(config, batch),
        state=state_bytes_per_parameter(config), parameters=parameters)
