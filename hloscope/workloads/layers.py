"""The transformer block's math: norms, projections, rotary positions, attention and the MLP.

Pure functions of arrays and parameter dicts, in the compute dtype with fp32 norms and softmax.
Every activation a remat policy may save is named with `checkpoint_name` (the table in
`hloscope.configs.tensors`, with MaxText's names for the same tensors): the norm outputs `norm1` /
`norm2`, the Q/K/V projections (`qkv` fused, or `query_proj` / `key_proj` / `value_proj`), the
attention output before its projection `attn_out`, that projection `out_proj`, the MLP's input
projections (`mlp_in`, or SwiGLU's `mlp_gate` / `mlp_up`), its activation `mlp_hidden` and its
output `mlp_out`. Names are identities outside `jax.checkpoint`, so they do not change a program
that does not remat, nor one whose policy does not mention them.

Attention is grouped-query when the model has fewer key/value heads than query heads, and one of
three by `config.attention`: `plain` softmax attention over the full [batch, heads, seq, seq]
scores, `blockwise` flash-style attention in pure JAX (`blockwise`), or the `splash` Pallas TPU
kernel (`splash`). The `attn_out` name is on the attention output in all three. Blocks take the
mesh (`mesh`, None outside a sharded program) only for the splash kernel's shard_map.
This module imports jax: import it only in child processes and tests.
"""
from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

from hloscope.configs.config import TransformerConfig
from hloscope.workloads.blockwise import blockwise_attention
from hloscope.workloads.splash import splash_attention

Tree = Any


def layer_norm(x: jax.Array, p: Tree, eps: float = 1e-5) -> jax.Array:
    x32 = x.astype(jnp.float32)
    mean = x32.mean(-1, keepdims=True)
    var = jnp.square(x32 - mean).mean(-1, keepdims=True)
    normed = (x32 - mean) * jax.lax.rsqrt(var + eps)
    return (normed * p["scale"].astype(jnp.float32) + p["bias"].astype(jnp.float32)).astype(x.dtype)


def rms_norm(x: jax.Array, p: Tree, eps: float = 1e-5) -> jax.Array:
    x32 = x.astype(jnp.float32)
    normed = x32 * jax.lax.rsqrt(jnp.square(x32).mean(-1, keepdims=True) + eps)
    return (normed * p["scale"].astype(jnp.float32)).astype(x.dtype)


def norm(x: jax.Array, p: Tree, config: TransformerConfig) -> jax.Array:
    if config.norm == "rmsnorm":
        return rms_norm(x, p, config.norm_eps)
    return layer_norm(x, p, config.norm_eps)


def dense(x: jax.Array, p: Tree) -> jax.Array:
    """x @ w, plus b when the layer has a bias."""
    y = x @ p["w"].astype(x.dtype)
    return y + p["b"].astype(x.dtype) if "b" in p else y


def rotary(x: jax.Array, theta: float) -> jax.Array:
    """Rotary position embedding of x [batch, seq, heads, head_dim], rotating half-split pairs."""
    seq, dim = x.shape[1], x.shape[-1]
    half = dim // 2
    inverse_frequency = theta ** (-jnp.arange(half, dtype=jnp.float32) * 2.0 / dim)
    angles = jnp.arange(seq, dtype=jnp.float32)[:, None] * inverse_frequency[None, :]
    cos, sin = jnp.cos(angles)[None, :, None, :], jnp.sin(angles)[None, :, None, :]
    x32 = x.astype(jnp.float32)
    first, second = x32[..., :half], x32[..., half:]
    rotated = jnp.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)
    return rotated.astype(x.dtype)


def causal_softmax(scores: jax.Array, dtype: Any) -> jax.Array:
    """Softmax over the last axis in fp32 with future keys masked; `scores` [..., q, k]."""
    seq = scores.shape[-1]
    causal = jnp.tril(jnp.ones((seq, seq), dtype=bool))
    scores = jnp.where(causal, scores, jnp.finfo(jnp.float32).min)
    return jax.nn.softmax(scores, axis=-1).astype(dtype)


def project_qkv(x: jax.Array, p: Tree, config: TransformerConfig) -> tuple[jax.Array, ...]:
    """Q [b, s, heads, d] and K, V [b, s, kv_heads, d]: fused (GPT) or separate projections."""
    batch, seq, _ = x.shape
    if "qkv" in p:
        fused = checkpoint_name(dense(x, p["qkv"]), "qkv")
        heads = (batch, seq, config.n_heads, config.head_dim)
        return tuple(t.reshape(heads) for t in jnp.split(fused, 3, axis=-1))
    kv_heads = (batch, seq, config.kv_heads, config.head_dim)
    q = checkpoint_name(dense(x, p["q"]), "query_proj").reshape(batch, seq, config.n_heads,
                                                                config.head_dim)
    k = checkpoint_name(dense(x, p["k"]), "key_proj").reshape(kv_heads)
    v = checkpoint_name(dense(x, p["v"]), "value_proj").reshape(kv_heads)
    return q, k, v


def attend(q: jax.Array, k: jax.Array, v: jax.Array, config: TransformerConfig,
           mesh: Any = None) -> jax.Array:
    """Causal attention; grouped-query when kv_heads < n_heads. Returns [b, s, heads * d]."""
    batch, seq, heads, dim = q.shape
    if config.attention == "blockwise":
        out = blockwise_attention(q, k, v, config.q_block, config.kv_block)
        return out.reshape(batch, seq, heads * dim)
    if config.attention == "splash":
        return splash_attention(q, k, v, config, mesh).reshape(batch, seq, heads * dim)
    scale = math.sqrt(dim)
    if config.kv_heads == heads:
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32) / scale
        out = jnp.einsum("bhqk,bkhd->bqhd", causal_softmax(scores, q.dtype), v)
        return out.reshape(batch, seq, heads * dim)
    groups = heads // config.kv_heads
    grouped = q.reshape(batch, seq, config.kv_heads, groups, dim)
    scores = jnp.einsum("bqkgd,bskd->bkgqs", grouped, k).astype(jnp.float32) / scale
    out = jnp.einsum("bkgqs,bskd->bqkgd", causal_softmax(scores, q.dtype), v)
    return out.reshape(batch, seq, heads * dim)


def attention(x: jax.Array, p: Tree, config: TransformerConfig, mesh: Any = None) -> jax.Array:
    q, k, v = project_qkv(x, p, config)
    if config.positions == "rotary":
        q, k = rotary(q, config.rope_theta), rotary(k, config.rope_theta)
    out = checkpoint_name(attend(q, k, v, config, mesh), "attn_out")
    return checkpoint_name(dense(out, p["out"]), "out_proj")


def mlp(x: jax.Array, p: Tree, config: TransformerConfig) -> jax.Array:
    if config.activation == "swiglu":
        gate = checkpoint_name(dense(x, p["gate"]), "mlp_gate")
        hidden = jax.nn.silu(gate) * checkpoint_name(dense(x, p["up"]), "mlp_up")
        out = dense(checkpoint_name(hidden, "mlp_hidden"), p["down"])
    else:
        hidden = jax.nn.gelu(checkpoint_name(dense(x, p["fc"]), "mlp_in"), approximate=True)
        out = dense(checkpoint_name(hidden, "mlp_hidden"), p["proj"])
    return checkpoint_name(out, "mlp_out")


def block(x: jax.Array, p: Tree, config: TransformerConfig, mesh: Any = None) -> jax.Array:
    """A pre-norm residual block: x + attention(norm(x)), then + mlp(norm(.)). The norm outputs
    are named `norm1` and `norm2` (config.NORM_NAMES) for llm.c's recompute levels."""
    x = x + attention(checkpoint_name(norm(x, p["ln1"], config), "norm1"), p["attn"], config,
                      mesh)
    return x + mlp(checkpoint_name(norm(x, p["ln2"], config), "norm2"), p["mlp"], config)
