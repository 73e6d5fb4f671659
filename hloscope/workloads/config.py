"""The transformer workload's configuration and its closed-form parameter count (no jax here).

The model is GPT-2 style: learned token and position embeddings, pre-LayerNorm blocks of causal
multi-head attention and a GELU MLP, a final LayerNorm, and an unembedding tied to the token
embedding. With `d_ff = 4 * d_model` its parameter count is the closed form

    N = h*v + L*(12h^2 + 13h) + 2h + s*h

(h = d_model, v = vocab, L = n_layers, s = seq_len): per block 4h^2 + 4h for attention (QKV and
output projections with biases), 8h^2 + 5h for the MLP, 4h for two LayerNorms.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from hloscope.errors import UsageError

REMAT_POLICIES = ("none", "full")
DTYPES = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class AdamWConfig:
    """Hand-written AdamW: fp32 master weights and moments, decoupled weight decay."""

    learning_rate: float = 3e-4
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-8
    weight_decay: float = 0.1


@dataclass(frozen=True)
class TransformerConfig:
    """Shapes, dtypes and program options of one train step (batch is the global batch)."""

    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 512
    vocab: int = 512
    seq_len: int = 64
    batch: int = 8
    param_dtype: str = "bfloat16"
    compute_dtype: str = "bfloat16"
    scan_layers: bool = False
    remat: str = "none"
    optimizer: AdamWConfig = AdamWConfig()

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise UsageError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if self.remat not in REMAT_POLICIES:
            raise UsageError(f"unknown remat {self.remat!r}; known: {', '.join(REMAT_POLICIES)}")
        for dtype in (self.param_dtype, self.compute_dtype):
            if dtype not in DTYPES:
                raise UsageError(f"unknown dtype {dtype!r}; known: {', '.join(DTYPES)}")
        sizes = (self.d_model, self.n_layers, self.n_heads, self.d_ff, self.vocab, self.seq_len,
                 self.batch)
        if min(sizes) < 1:
            raise UsageError("every size of a transformer config must be positive")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TransformerConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UsageError(f"unknown transformer config keys: {', '.join(unknown)}")
        values = dict(data)
        if isinstance(values.get("optimizer"), dict):
            values["optimizer"] = AdamWConfig(**values["optimizer"])
        return cls(**values)


def block_param_count(d_model: int, d_ff: int) -> int:
    """Parameters of one block: attention, MLP and two LayerNorms (weights and biases)."""
    attention = 4 * d_model * d_model + 4 * d_model
    mlp = 2 * d_model * d_ff + d_ff + d_model
    return attention + mlp + 4 * d_model


def param_count(config: TransformerConfig) -> int:
    """Parameters of the model for any d_ff (the unembedding is tied: counted once)."""
    h = config.d_model
    embeddings = config.vocab * h + config.seq_len * h
    return embeddings + config.n_layers * block_param_count(h, config.d_ff) + 2 * h


def closed_form_param_count(d_model: int, vocab: int, n_layers: int, seq_len: int) -> int:
    """N = h*v + L*(12h^2 + 13h) + 2h + s*h, the count when d_ff = 4h."""
    h = d_model
    return h * vocab + n_layers * (12 * h * h + 13 * h) + 2 * h + seq_len * h
