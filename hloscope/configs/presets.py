"""Named model configurations from published dimensions, and overrides on top of them (no jax).

Architecture dimensions are the published ones (parameter counts are tested against the published
totals): GPT-2 small (Radford et al. 2019: 12 layers, d_model 768, 12 heads, 1024 positions,
vocab 50257; 124,439,808 parameters), Llama 3.2 1B (hidden 2048, 16 layers, 32 heads, 8 KV
heads, intermediate 8192, vocab 128256, tied embeddings: 1,235,814,400), Llama 3 8B (4096, 32,
32, 8, 14336: 8,030,261,248) and Llama 3 70B (8192, 80, 64, 8, 28672: 70,553,706,496); Llama 3
/ 3.1 share these dimensions (3.1 changes only the rotary scaling, which costs the same).

Training shapes are defaults, not dimensions: the Llama presets use sequences of 2048 tokens, not
Llama 3's 8192 (override with `seq_len`, `--seq`); they were chosen when attention materialised
[batch, heads, seq, seq] scores and the loss the full logits, and are kept so earlier sweeps
compare. The Llama presets shard parameters and optimizer state (FSDP) and scan over layers by
default. The at-scale ones (`llama-8b`, `llama-70b`) also default to blockwise attention and the
blockwise loss, as MaxText and Levanter runs at that scale do; `tiny`, `gpt2-small` and
`llama-1b` keep the plain program (the fixtures' model is `tiny`): see `config`'s docstring.
"""
from __future__ import annotations

from typing import Any

from hloscope.configs.config import TransformerConfig
from hloscope.errors import UsageError

GPT_STYLE: dict[str, Any] = {"norm": "layernorm", "activation": "gelu", "positions": "learned",
                             "tie_embeddings": True, "biases": True}
AT_SCALE: dict[str, Any] = {"attention": "blockwise", "loss": "blockwise"}
LLAMA_STYLE: dict[str, Any] = {"norm": "rmsnorm", "activation": "swiglu", "positions": "rotary",
                               "tie_embeddings": False, "biases": False, "rope_theta": 500000.0,
                               "norm_eps": 1e-5, "fsdp": True, "scan_layers": True}

PRESETS: dict[str, dict[str, Any]] = {
    # The committed fixtures' model (fixtures/make_fixtures.py): small enough for CI.
    "tiny": {**GPT_STYLE, "d_model": 128, "n_layers": 2, "n_heads": 4, "d_ff": 512,
             "vocab": 512, "seq_len": 64, "batch": 8},
    "gpt2-small": {**GPT_STYLE, "d_model": 768, "n_layers": 12, "n_heads": 12, "d_ff": 3072,
                   "vocab": 50257, "seq_len": 1024, "batch": 32},
    "llama-1b": {**LLAMA_STYLE, "tie_embeddings": True, "d_model": 2048, "n_layers": 16,
                 "n_heads": 32, "n_kv_heads": 8, "d_ff": 8192, "vocab": 128256,
                 "seq_len": 2048, "batch": 16},
    "llama-8b": {**LLAMA_STYLE, **AT_SCALE, "d_model": 4096, "n_layers": 32, "n_heads": 32,
                 "n_kv_heads": 8, "d_ff": 14336, "vocab": 128256, "seq_len": 2048, "batch": 16},
    "llama-70b": {**LLAMA_STYLE, **AT_SCALE, "d_model": 8192, "n_layers": 80, "n_heads": 64,
                  "n_kv_heads": 8, "d_ff": 28672, "vocab": 128256, "seq_len": 2048,
                  "batch": 64},
}

PUBLISHED_PARAMETERS = {
    "gpt2-small": 124_439_808,
    "llama-1b": 1_235_814_400,
    "llama-8b": 8_030_261_248,
    "llama-70b": 70_553_706_496,
}
"""Published parameter totals (GPT-2 paper's closed form; the Llama checkpoints' tensor sizes)."""


def preset_names() -> tuple[str, ...]:
    return tuple(PRESETS)


def preset_config(name: str, **overrides: Any) -> TransformerConfig:
    """The preset's config with `overrides` (None values are ignored); UsageError when unknown."""
    values = PRESETS.get(name.strip().lower())
    if values is None:
        raise UsageError(f"unknown model {name!r}; known: {', '.join(PRESETS)}")
    given = {key: value for key, value in overrides.items() if value is not None}
    return TransformerConfig.from_dict({**values, **given})
