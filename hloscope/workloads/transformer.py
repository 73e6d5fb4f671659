"""The train step: forward, cross-entropy, gradients and hand-written AdamW, from abstract shapes.

Built from `jax.ShapeDtypeStruct`s, so lowering allocates nothing and configs of any size (70B)
compile deviceless. The state holds the parameters in `param_dtype`, fp32 master weights (only
when `param_dtype` is not float32: otherwise the parameters are the master copy) and fp32 AdamW
moments: 16 bytes per parameter for bf16 parameters with their gradients, as in the ZeRO paper.
Weight decay applies to every parameter (kept simple; recipes usually skip norms and biases).

Program structure the analyses rely on:
- unrolled layers run under `jax.named_scope(f"layer_{i}")`, so op names carry the layer index;
  scanned layers stack their parameters on a leading axis and run `lax.scan` (a `while` loop in
  HLO) under `named_scope("layers")` (see `remat` for partial and nested layouts);
- the optimizer update runs under `named_scope("optimizer")`;
- the state is donated: its outputs alias its inputs;
- with `micro_batches` K > 1 the forward and backward run in a `lax.scan` over K micro-batches
  (gradient accumulation, fp32 sums averaged; loss the mean of the micro-batches' means, which is
  the global mean since they are equal) before the one optimizer update. Micro-batch k takes the
  rows congruent to k mod K, so each data-parallel shard supplies B/(D·K) of its own rows to
  every micro-batch and no rows move between devices.

The loss is `plain` (full [b, s, vocab] logits) or `blockwise` (`blockwise.py`), by config.

With `optimizer_offload` (MaxText's `optimizer_memory_host_offload`) the fp32 master weights and
both moments are arguments and outputs in pinned host memory (their shardings' memory kind is
`pinned_host`, sharded as on the device): the step `device_put`s them to device memory under
`named_scope("optimizer")` for the update and back to the host after it, as MaxText's train
step does with its optimizer state. Measured on TPU v5e (libtpu 0.0.42.1, deviceless): the
state is in host memory between steps (the host arguments are exactly 12 B per parameter held)
and moves in and out once per step, but XLA starts the copies into the device at the start of
the program, so the state is on the device through the backward pass and the device total is
not lower (docs/oom.md, "optimizer-offload"). Neither an optimization barrier with the
gradients nor a per-layer scan of the update changed that (the barrier is walked through, the
scan added host temporaries and un-aliased outputs), so neither is kept.

Blocks are GPT- or Llama-style by config (`layers`); sharding is by config (`sharding`). This
module imports jax at the top: import it only in child processes and tests.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.sharding import Mesh

from hloscope.configs.config import TransformerConfig
from hloscope.errors import UsageError
from hloscope.workloads import sharding
from hloscope.workloads.blockwise import blockwise_cross_entropy
from hloscope.workloads.layers import block, norm
from hloscope.workloads.remat import layer_groups, run_layers

Tree = Any
Shape = tuple[int, ...]


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


def _norm_shapes(config: TransformerConfig) -> dict[str, Shape]:
    h = config.d_model
    return {"scale": (h,), "bias": (h,)} if config.norm == "layernorm" else {"scale": (h,)}


def _linear(n_in: int, n_out: int, config: TransformerConfig) -> dict[str, Shape]:
    return {"w": (n_in, n_out), "b": (n_out,)} if config.biases else {"w": (n_in, n_out)}


def _attention_shapes(config: TransformerConfig) -> dict[str, Any]:
    h, kv = config.d_model, config.kv_heads * config.head_dim
    if config.kv_heads == config.n_heads:  # multi-head attention: one fused projection
        return {"qkv": _linear(h, 3 * h, config), "out": _linear(h, h, config)}
    return {"q": _linear(h, h, config), "k": _linear(h, kv, config),
            "v": _linear(h, kv, config), "out": _linear(h, h, config)}


def _mlp_shapes(config: TransformerConfig) -> dict[str, Any]:
    h, f = config.d_model, config.d_ff
    if config.activation == "swiglu":
        return {"gate": _linear(h, f, config), "up": _linear(h, f, config),
                "down": _linear(f, h, config)}
    return {"fc": _linear(h, f, config), "proj": _linear(f, h, config)}


def block_shapes(config: TransformerConfig) -> dict[str, Any]:
    return {"ln1": _norm_shapes(config), "attn": _attention_shapes(config),
            "ln2": _norm_shapes(config), "mlp": _mlp_shapes(config)}


def param_shapes(config: TransformerConfig) -> dict[str, Any]:
    """Nested dict of shapes. `layers`: a list of blocks (unrolled), one stacked block (scanned),
    or a list of stacked blocks (scanned partial remat: see `remat.layer_groups`)."""
    shapes: dict[str, Any] = {"embed": {"tokens": (config.vocab, config.d_model)}}
    if config.positions == "learned":
        shapes["embed"]["positions"] = (config.seq_len, config.d_model)
    shapes["layers"] = _layer_shapes(config)
    shapes["final_norm"] = _norm_shapes(config)
    if not config.tie_embeddings:
        shapes["unembed"] = {"w": (config.d_model, config.vocab)}
    return shapes


def _layer_shapes(config: TransformerConfig) -> Any:
    one = block_shapes(config)
    if not config.scan_layers:
        return [one for _ in range(config.n_layers)]
    stacks = [jax.tree.map(lambda s, n=group.count: (n, *s), one, is_leaf=_is_shape)
              for group in layer_groups(config)]
    return stacks if len(stacks) > 1 else stacks[0]


def _is_shape(node: Any) -> bool:
    return isinstance(node, tuple) and all(isinstance(d, int) for d in node)


def _path_names(path: Any) -> tuple[str, ...]:
    return tuple(str(getattr(key, "key", getattr(key, "idx", key))) for key in path)


def param_shardings(config: TransformerConfig, mesh: Mesh | None) -> Tree:
    """A tree of NamedShardings matching param_shapes (None without a mesh)."""
    if mesh is None:
        return jax.tree.map(lambda s: None, param_shapes(config), is_leaf=_is_shape)
    stacked = 1 if config.scan_layers else 0

    def spec(path: Any, shape: Shape) -> Any:
        names = _path_names(path)
        layer_axes = stacked if names[0] == "layers" else 0
        return sharding.named(mesh, sharding.param_spec(names, shape, layer_axes, config, mesh))

    return jax.tree_util.tree_map_with_path(spec, param_shapes(config), is_leaf=_is_shape)


def abstract_params(config: TransformerConfig, dtype: Any, shardings: Any = None) -> Tree:
    """ShapeDtypeStructs of the parameters; `shardings` is one sharding or a matching tree."""
    shapes = param_shapes(config)
    if shardings is None or not isinstance(shardings, dict):
        return jax.tree.map(lambda s: jax.ShapeDtypeStruct(s, dtype, sharding=shardings), shapes,
                            is_leaf=_is_shape)
    return jax.tree.map(lambda s, sh: jax.ShapeDtypeStruct(s, dtype, sharding=sh), shapes,
                        shardings, is_leaf=_is_shape)


def abstract_state(config: TransformerConfig, shardings: Any = None,
                   step_sharding: Any = None) -> TrainState:
    params = abstract_params(config, jnp.dtype(config.param_dtype), shardings)
    fp32 = abstract_params(config, jnp.float32, shardings)
    master = None if config.param_dtype == "float32" else fp32
    if step_sharding is None and not isinstance(shardings, dict):
        step_sharding = shardings
    step = jax.ShapeDtypeStruct((), jnp.int32, sharding=step_sharding)
    return TrainState(params, master, fp32, fp32, step)


def abstract_batch(config: TransformerConfig, sharding: Any = None) -> dict[str, Any]:
    shape = (config.batch, config.seq_len)
    token = jax.ShapeDtypeStruct(shape, jnp.int32, sharding=sharding)
    return {"tokens": token, "targets": token}


def hidden_states(params: Tree, tokens: jax.Array, config: TransformerConfig,
                  mesh: Mesh | None = None) -> jax.Array:
    """The final norm's output [batch, seq, d_model] in the compute dtype."""
    dtype = jnp.dtype(config.compute_dtype)
    embed = params["embed"]
    x = embed["tokens"][tokens]
    if config.positions == "learned":
        x = x + embed["positions"][None, : tokens.shape[1]]
    x = _constrain(x.astype(dtype), mesh, config)

    def run_block(x: jax.Array, p: Tree) -> jax.Array:
        return _constrain(block(x, p, config, mesh), mesh, config)

    x = run_layers(x, params["layers"], config, run_block)
    return norm(x, params["final_norm"], config)


def unembedding(params: Tree, config: TransformerConfig) -> jax.Array:
    """The output projection in the compute dtype: [vocab, h] when tied, else [h, vocab]."""
    dtype = jnp.dtype(config.compute_dtype)
    if config.tie_embeddings:
        return params["embed"]["tokens"].astype(dtype)
    return params["unembed"]["w"].astype(dtype)


def forward(params: Tree, tokens: jax.Array, config: TransformerConfig,
            mesh: Mesh | None = None) -> jax.Array:
    """Logits [batch, seq, vocab] in the compute dtype."""
    x = hidden_states(params, tokens, config, mesh)
    if config.tie_embeddings:
        return jnp.einsum("bsh,vh->bsv", x, unembedding(params, config))
    return x @ unembedding(params, config)


def _constrain(x: jax.Array, mesh: Mesh | None, config: TransformerConfig) -> jax.Array:
    return x if mesh is None else sharding.constrain(x, mesh, config, sharding.DATA)


def loss_fn(params: Tree, batch: dict[str, jax.Array], config: TransformerConfig,
            mesh: Mesh | None = None) -> jax.Array:
    """Mean next-token cross-entropy (fp32), plain or blockwise by config."""
    if config.loss == "blockwise":
        x = hidden_states(params, batch["tokens"], config, mesh)
        return blockwise_cross_entropy(x, batch["targets"], unembedding(params, config),
                                       config.tie_embeddings, config.loss_chunk_size)
    logits = forward(params, batch["tokens"], config, mesh).astype(jnp.float32)
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


def train_step_fn(config: TransformerConfig, mesh: Mesh | None = None,
                  state_shardings: Any = None,
                  host_shardings: TrainState | None = None) -> Callable[..., Any]:
    """The train step as a function named `train_step` (its HLO module is `jit_train_step`).
    With `state_shardings` (device memory), the new state is constrained to the old one's
    shardings; with `host_shardings` (the state's shardings, the optimizer's in pinned host
    memory) the optimizer state comes to the device for the update and goes back after it."""

    def train_step(state: TrainState, batch: dict[str, jax.Array]) -> tuple[TrainState, Any]:
        if config.micro_batches > 1:
            grad_shardings = None if state_shardings is None else state_shardings.params
            loss, grads = accumulated_gradients(state.params, batch, config, mesh,
                                                grad_shardings)
        else:
            loss, grads = jax.value_and_grad(loss_fn)(state.params, batch, config, mesh)
        with jax.named_scope("optimizer"):
            if host_shardings is not None:
                state = move_optimizer_state(state, host_shardings, "device")
            new_state = adamw_update(state, grads, config)
        if state_shardings is not None:
            new_state = jax.lax.with_sharding_constraint(new_state, state_shardings)
        if host_shardings is not None:
            with jax.named_scope("optimizer"):
                new_state = move_optimizer_state(new_state, host_shardings, "pinned_host")
        return new_state, {"loss": loss}

    return train_step


OFFLOADED_FIELDS = ("master", "mu", "nu")
"""The TrainState fields `optimizer_offload` keeps in pinned host memory."""


def move_optimizer_state(state: TrainState, shardings: TrainState, kind: str) -> TrainState:
    """`state` with its master weights and moments `device_put` to memory `kind` ("device" or
    "pinned_host"), sharded as `shardings` says (inside jit: an annotated copy XLA schedules)."""
    moved = {name: jax.device_put(getattr(state, name), jax.tree.map(
        lambda s: s.with_memory_kind(kind), getattr(shardings, name)))
        for name in OFFLOADED_FIELDS if getattr(state, name) is not None}
    return state._replace(**moved)


def offloaded_state(state: TrainState) -> TrainState:
    """Abstract state whose master weights and moments live in pinned host memory."""
    def to_host(leaf: jax.ShapeDtypeStruct) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype,
                                    sharding=leaf.sharding.with_memory_kind("pinned_host"))

    moved = {name: jax.tree.map(to_host, getattr(state, name))
             for name in OFFLOADED_FIELDS if getattr(state, name) is not None}
    return state._replace(**moved)


def micro_batches(batch: dict[str, jax.Array], count: int,
                  mesh: Mesh | None = None) -> dict[str, jax.Array]:
    """The batch as [count, batch / count, ...]: micro-batch k holds the rows k, k + count, ...
    (a reshape and a transpose, so each device keeps its own rows)."""
    def split(a: jax.Array) -> jax.Array:
        rows = a.shape[0] // count
        return jnp.swapaxes(a.reshape(rows, count, *a.shape[1:]), 0, 1)

    split_batch = {name: split(a) for name, a in batch.items()}
    if mesh is None:
        return split_batch
    spec = sharding.batch_sharding(mesh).spec
    layout = sharding.named(mesh, jax.sharding.PartitionSpec(None, *spec))
    return jax.lax.with_sharding_constraint(split_batch, layout)


def accumulated_gradients(params: Tree, batch: dict[str, jax.Array], config: TransformerConfig,
                          mesh: Mesh | None = None,
                          grad_shardings: Tree = None) -> tuple[jax.Array, Tree]:
    """Loss and gradients of the whole batch from a scan over `config.micro_batches`
    micro-batches: fp32 sums, averaged (the gradients in fp32, sharded like the parameters)."""
    count = config.micro_batches

    def zeros(p: jax.Array) -> jax.Array:
        return jnp.zeros(p.shape, jnp.float32)

    summed = jax.tree.map(zeros, params)
    if grad_shardings is not None:
        summed = jax.lax.with_sharding_constraint(summed, grad_shardings)

    def accumulate(carry: tuple[jax.Array, Tree],
                   micro: dict[str, jax.Array]) -> tuple[tuple[jax.Array, Tree], None]:
        loss_sum, grad_sum = carry
        loss, grads = jax.value_and_grad(loss_fn)(params, micro, config, mesh)
        grad_sum = jax.tree.map(lambda s, g: s + g.astype(jnp.float32), grad_sum, grads)
        return (loss_sum + loss, grad_sum), None

    initial = (jnp.zeros((), jnp.float32), summed)
    (loss, grads), _ = jax.lax.scan(accumulate, initial, micro_batches(batch, count, mesh))
    return loss / count, jax.tree.map(lambda g: g / count, grads)


def build_train_step(mesh: Mesh, **config_values: Any) -> CompileSpec:
    """The compile job's builder: train step, abstract sharded state and batch, donated state."""
    config = TransformerConfig.from_dict(config_values)
    mesh = sharding.train_mesh(mesh, config)
    data = sharding.data_size(mesh)
    if config.batch % data:
        raise UsageError(f"batch {config.batch} does not split over {data} devices")
    config.check_placement(mesh.devices.flat[0].platform, data)
    batch = abstract_batch(config, sharding.batch_sharding(mesh))
    if not sharding.is_sharded(config):
        replicated = sharding.replicated(mesh)
        shardings = None
        if config.optimizer_offload:  # a tree, so the optimizer's leaves can move to the host
            shardings = jax.tree.map(lambda s: replicated, param_shapes(config),
                                     is_leaf=_is_shape)
        state = abstract_state(config, shardings or replicated, replicated)
        # The mesh only for splash's shard_map and the micro-batches' layout: the plain
        # data-parallel program (the fixtures') has no sharding constraint.
        needs_mesh = config.attention == "splash" or config.micro_batches > 1
        host = _host_shardings(state, config)
        step = train_step_fn(config, mesh if needs_mesh else None, host_shardings=host)
        return CompileSpec(step, (_placed(state, host), batch), donate_argnums=(0,))
    shardings = param_shardings(config, mesh)
    state = abstract_state(config, shardings, sharding.replicated(mesh))
    state_shardings = jax.tree.map(lambda leaf: leaf.sharding, state)
    host = _host_shardings(state, config)
    step = train_step_fn(config, mesh, state_shardings, host)
    return CompileSpec(step, (_placed(state, host), batch), donate_argnums=(0,))


def _host_shardings(state: TrainState, config: TransformerConfig) -> TrainState | None:
    """With `optimizer_offload`, the state's shardings with the optimizer's in pinned host
    memory; else None."""
    if not config.optimizer_offload:
        return None
    return jax.tree.map(lambda leaf: leaf.sharding, offloaded_state(state))


def _placed(state: TrainState, host: TrainState | None) -> TrainState:
    return state if host is None else offloaded_state(state)


def leaf_count(tree: Tree) -> int:
    """Total elements of a tree of arrays or ShapeDtypeStructs."""
    return sum(math.prod(leaf.shape) for leaf in jax.tree.leaves(tree))
