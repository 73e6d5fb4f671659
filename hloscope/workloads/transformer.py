"""A small but real GPT-style train step: forward, cross-entropy, gradients and hand-written AdamW.

Built from abstract shapes (`jax.ShapeDtypeStruct`), so lowering allocates nothing and configs of
any size compile deviceless. The state holds the parameters in `param_dtype`, fp32 master weights
(only when `param_dtype` is not float32: otherwise the parameters are the master copy) and fp32
AdamW moments: 16 bytes per parameter for bf16 parameters with their gradients, as in the ZeRO
paper. Weight decay applies to every parameter (kept simple; GPT recipes usually skip biases).

Program structure the analyses rely on:
- unrolled layers run under `jax.named_scope(f"layer_{i}")`, so op names carry the layer index;
- `scan_layers=True` stacks the block parameters on a leading axis and runs `lax.scan` (a
  `while` loop in HLO) under `jax.named_scope("layers")`;
- `remat="full"` wraps each block in `jax.checkpoint` (prevent_cse left at its default, True).

Data parallel only for now: the batch is split over every mesh axis, parameters are replicated,
and the state is donated (its outputs alias its inputs).

This module imports jax at the top: import it only in child processes and tests.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from hloscope.errors import UsageError
from hloscope.workloads.config import TransformerConfig

Tree = Any


class TrainState(NamedTuple):
    params: Tree  # param_dtype
    master: Tree  # fp32 master weights, or None when param_dtype is float32
    mu: Tree  # fp32 first moment
    nu: Tree  # fp32 second moment
    step: Any  # int32 scalar


@dataclass(frozen=True)
class CompileSpec:
    """A function and the abstract arguments to lower it with (what a compile job needs)."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    donate_argnums: tuple[int, ...] = ()


def block_shapes(config: TransformerConfig) -> dict[str, Any]:
    h, f = config.d_model, config.d_ff
    return {
        "ln1": {"scale": (h,), "bias": (h,)},
        "attn": {"qkv": {"w": (h, 3 * h), "b": (3 * h,)}, "out": {"w": (h, h), "b": (h,)}},
        "ln2": {"scale": (h,), "bias": (h,)},
        "mlp": {"fc": {"w": (h, f), "b": (f,)}, "proj": {"w": (f, h), "b": (h,)}},
    }


def param_shapes(config: TransformerConfig) -> dict[str, Any]:
    """Nested dict of shapes; `layers` is a list of blocks, or one stacked block when scanned."""
    block = block_shapes(config)
    if config.scan_layers:
        layers: Any = jax.tree.map(lambda s: (config.n_layers, *s), block, is_leaf=_is_shape)
    else:
        layers = [block for _ in range(config.n_layers)]
    h = config.d_model
    return {
        "embed": {"tokens": (config.vocab, h), "positions": (config.seq_len, h)},
        "layers": layers,
        "final_norm": {"scale": (h,), "bias": (h,)},
    }


def _is_shape(node: Any) -> bool:
    return isinstance(node, tuple) and all(isinstance(d, int) for d in node)


def abstract_params(config: TransformerConfig, dtype: Any, sharding: Any = None) -> Tree:
    return jax.tree.map(lambda s: jax.ShapeDtypeStruct(s, dtype, sharding=sharding),
                        param_shapes(config), is_leaf=_is_shape)


def abstract_state(config: TransformerConfig, sharding: Any = None) -> TrainState:
    params = abstract_params(config, jnp.dtype(config.param_dtype), sharding)
    fp32 = abstract_params(config, jnp.float32, sharding)
    master = None if config.param_dtype == "float32" else fp32
    step = jax.ShapeDtypeStruct((), jnp.int32, sharding=sharding)
    return TrainState(params, master, fp32, fp32, step)


def abstract_batch(config: TransformerConfig, sharding: Any = None) -> dict[str, Any]:
    shape = (config.batch, config.seq_len)
    token = jax.ShapeDtypeStruct(shape, jnp.int32, sharding=sharding)
    return {"tokens": token, "targets": token}


def init_params(config: TransformerConfig, key: jax.Array) -> Tree:
    """Real parameters (normal(0.02) weights, zero biases, unit LayerNorm scales)."""
    shapes = param_shapes(config)
    leaves, treedef = jax.tree.flatten_with_path(shapes, is_leaf=_is_shape)
    keys = jax.random.split(key, len(leaves))
    dtype = jnp.dtype(config.param_dtype)
    values = [_init_leaf(path, shape, k, dtype) for (path, shape), k in zip(leaves, keys,
                                                                             strict=True)]
    return jax.tree.unflatten(treedef, values)


def _init_leaf(path: Any, shape: tuple[int, ...], key: jax.Array, dtype: Any) -> jax.Array:
    name = str(getattr(path[-1], "key", path[-1]))
    if name == "scale":
        return jnp.ones(shape, dtype)
    if name in ("b", "bias"):
        return jnp.zeros(shape, dtype)
    return (0.02 * jax.random.normal(key, shape, jnp.float32)).astype(dtype)


def layer_norm(x: jax.Array, p: Tree, eps: float = 1e-5) -> jax.Array:
    x32 = x.astype(jnp.float32)
    mean = x32.mean(-1, keepdims=True)
    var = jnp.square(x32 - mean).mean(-1, keepdims=True)
    normed = (x32 - mean) * jax.lax.rsqrt(var + eps)
    return (normed * p["scale"].astype(jnp.float32) + p["bias"].astype(jnp.float32)).astype(x.dtype)


def dense(x: jax.Array, p: Tree) -> jax.Array:
    return x @ p["w"].astype(x.dtype) + p["b"].astype(x.dtype)


def attention(x: jax.Array, p: Tree, config: TransformerConfig) -> jax.Array:
    batch, seq, _ = x.shape
    heads = (batch, seq, config.n_heads, config.head_dim)
    q, k, v = (t.reshape(heads) for t in jnp.split(dense(x, p["qkv"]), 3, axis=-1))
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32) / math.sqrt(config.head_dim)
    causal = jnp.tril(jnp.ones((seq, seq), dtype=bool))
    scores = jnp.where(causal, scores, jnp.finfo(jnp.float32).min)
    probs = jax.nn.softmax(scores, axis=-1).astype(x.dtype)
    out = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(batch, seq, config.d_model)
    return dense(out, p["out"])


def mlp(x: jax.Array, p: Tree) -> jax.Array:
    return dense(jax.nn.gelu(dense(x, p["fc"]), approximate=True), p["proj"])


def block(x: jax.Array, p: Tree, config: TransformerConfig) -> jax.Array:
    x = x + attention(layer_norm(x, p["ln1"]), p["attn"], config)
    return x + mlp(layer_norm(x, p["ln2"]), p["mlp"])


def _block_fn(config: TransformerConfig) -> Callable[[jax.Array, Tree], jax.Array]:
    def run_block(x: jax.Array, p: Tree) -> jax.Array:
        return block(x, p, config)

    return jax.checkpoint(run_block) if config.remat == "full" else run_block


def run_layers(x: jax.Array, layers: Tree, config: TransformerConfig) -> jax.Array:
    block_fn = _block_fn(config)
    if config.scan_layers:
        with jax.named_scope("layers"):
            x, _ = jax.lax.scan(lambda carry, p: (block_fn(carry, p), None), x, layers)
        return x
    for index, layer in enumerate(layers):
        with jax.named_scope(f"layer_{index}"):
            x = block_fn(x, layer)
    return x


def forward(params: Tree, tokens: jax.Array, config: TransformerConfig) -> jax.Array:
    """Logits [batch, seq, vocab] in the compute dtype; the unembedding is the token embedding."""
    dtype = jnp.dtype(config.compute_dtype)
    embed = params["embed"]
    x = (embed["tokens"][tokens] + embed["positions"][None, : tokens.shape[1]]).astype(dtype)
    x = layer_norm(run_layers(x, params["layers"], config), params["final_norm"])
    return jnp.einsum("bsh,vh->bsv", x, embed["tokens"].astype(dtype))


def loss_fn(params: Tree, batch: dict[str, jax.Array], config: TransformerConfig) -> jax.Array:
    logits = forward(params, batch["tokens"], config).astype(jnp.float32)
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    picked = jnp.take_along_axis(log_probs, batch["targets"][..., None], axis=-1)
    return -picked.mean()


def adamw_update(state: TrainState, grads: Tree, config: TransformerConfig) -> TrainState:
    opt = config.optimizer
    step = state.step + 1
    grads32 = jax.tree.map(lambda g: g.astype(jnp.float32), grads)
    mu = jax.tree.map(lambda m, g: opt.beta1 * m + (1 - opt.beta1) * g, state.mu, grads32)
    nu = jax.tree.map(lambda v, g: opt.beta2 * v + (1 - opt.beta2) * g * g, state.nu, grads32)
    count = step.astype(jnp.float32)
    mu_scale = 1 / (1 - opt.beta1**count)
    nu_scale = 1 / (1 - opt.beta2**count)
    master = state.params if state.master is None else state.master

    def update(w: jax.Array, m: jax.Array, v: jax.Array) -> jax.Array:
        adam = (m * mu_scale) / (jnp.sqrt(v * nu_scale) + opt.eps)
        return w - opt.learning_rate * (adam + opt.weight_decay * w)

    master = jax.tree.map(update, master, mu, nu)
    params = jax.tree.map(lambda w, p: w.astype(p.dtype), master, state.params)
    return TrainState(params, None if state.master is None else master, mu, nu, step)


def train_step_fn(config: TransformerConfig) -> Callable[..., Any]:
    """The train step as a function named `train_step` (its HLO module is `jit_train_step`)."""

    def train_step(state: TrainState, batch: dict[str, jax.Array]) -> tuple[TrainState, Any]:
        loss, grads = jax.value_and_grad(loss_fn)(state.params, batch, config)
        with jax.named_scope("optimizer"):
            new_state = adamw_update(state, grads, config)
        return new_state, {"loss": loss}

    return train_step


def build_train_step(mesh: Mesh, **config_values: Any) -> CompileSpec:
    """The compile job's builder: train step, abstract sharded state and batch, donated state."""
    config = TransformerConfig.from_dict(config_values)
    devices = mesh.devices.size
    if config.batch % devices:
        raise UsageError(f"batch {config.batch} does not split over {devices} devices")
    replicated = NamedSharding(mesh, P())
    split = NamedSharding(mesh, P(tuple(mesh.axis_names)))
    state = abstract_state(config, replicated)
    batch = abstract_batch(config, split)
    return CompileSpec(train_step_fn(config), (state, batch), donate_argnums=(0,))


def leaf_count(tree: Tree) -> int:
    """Total elements of a tree of arrays or ShapeDtypeStructs."""
    return sum(math.prod(leaf.shape) for leaf in jax.tree.leaves(tree))
