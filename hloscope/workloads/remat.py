"""How the layers run: unrolled or scanned, and which of them under which `jax.checkpoint`.

- Unrolled: layer i runs under `jax.named_scope(f"layer_{i}")`; the first `rematted_layers` are
  wrapped in `jax.checkpoint` with the config's policy.
- Scanned: `lax.scan` over parameters stacked on a leading axis, under `named_scope("layers")`.
  Partial remat scans two stacks, `layers_remat` (checkpointed) then `layers_plain`, so the state
  holds the layers as a list of the two stacks (see `layer_groups`).
- Nested (`remat_block` B): the stack is viewed as [L/B, B, ...] (a reshape, no copy) and run as
  scan(checkpoint(scan(checkpoint(block), B)), L/B): the outer level saves only L/B block
  inputs, the inner recomputes each layer once more in the backward pass.

`full` is `jax.checkpoint` with its default policy (prevent_cse left True); the named policies
are `jax.checkpoint_policies`; `offload_named` moves the named activations to pinned host memory.

Policies on the block's own names (config.BLOCK_REMAT_POLICIES):
- `offload_carries`: inside the checkpointed block, its input is named `layer_input` and the
  policy is `save_and_offload_only_these_names(names_which_can_be_saved=[],
  names_which_can_be_offloaded=["layer_input"], offload_src="device", offload_dst="pinned_host")`:
  nothing is saved on the device and the per-layer residual stream, which the layer scan stacks
  for the backward pass, lives in pinned host memory (MaxText's `decoder_layer_input` offload).
  Every use in the block reads the named input, so the primal one is not kept beside it.
- `offload_scan`: Levanter's `offload` (haliax `ScanCheckpointPolicy(save_carries="offload",
  save_inputs="offload")`): the block's parameter slices, the scan's per-layer inputs, are named
  `layer_params` and offloaded as well.
- `recompute:R` (llm.c's `-r R`): `save_from_both_policies(dots_with_no_batch_dims_saveable,
  save_only_these_names(kept))`, kept = the block's names minus config.RECOMPUTE_LEVELS[R]. A
  "save anything except these names" policy cannot express this: the value a name wraps is itself
  saveable, so jax saves it under the other name (`save_anything_except_these_names` saves the
  GELU output it was told not to). Saving only projections and names makes every elementwise
  chain, the excluded activations among them, recomputable from saved matmul outputs.
Per-tensor policies (`names:NAME=CHOICE,...`, hloscope.configs.tensors; a user step's over its own
names, hloscope.configs.step): `save_and_offload_only_
these_names(names_which_can_be_saved=<device names>, names_which_can_be_offloaded=<offload
names>, offload_src="device", offload_dst="pinned_host")`; remat names and unnamed values are
recomputed. `save_named` / `offload_named` save the same tensors as the per-tensor policy with
`qkv` (the Q/K/V projection names), `attn_out` and `mlp_hidden` on the device / offloaded.
Names are identities outside `jax.checkpoint`; the input and parameter names are added only
under the carry offload policies, so the other variants' programs do not change.
This module imports jax: import it only in child processes and tests.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
from jax.ad_checkpoint import checkpoint_name

from hloscope.configs.config import (
    CARRY_OFFLOAD_POLICIES,
    LAYER_INPUT,
    LAYER_PARAMS,
    NORM_NAMES,
    RECOMPUTE_LEVELS,
    SAVED_NAMES,
    TransformerConfig,
)
from hloscope.configs.step import explicit_named
from hloscope.configs.tensors import (
    NAMED_PREFIX,
    block_names,
    decode_named,
    names_with,
    qkv_names,
)

Tree = Any
BlockFn = Callable[[jax.Array, Tree], jax.Array]


@dataclass(frozen=True)
class LayerGroup:
    """Consecutive layers that share a layout and a remat decision."""

    count: int
    rematted: bool
    scope: str


def layer_groups(config: TransformerConfig) -> list[LayerGroup]:
    """One group, or two for a scanned partial remat (checkpointed first, then plain)."""
    rematted = config.rematted_layers
    if config.scan_layers and 0 < rematted < config.n_layers:
        return [LayerGroup(rematted, True, "layers_remat"),
                LayerGroup(config.n_layers - rematted, False, "layers_plain")]
    return [LayerGroup(config.n_layers, rematted == config.n_layers, "layers")]


def checkpoint_policy(name: str, config: TransformerConfig | None = None
                      ) -> Callable[..., Any] | None:
    """The jax.checkpoint_policies entry a remat name stands for (None: jax's default);
    `config` says what the built-in block calls its Q/K/V projections (own models: `qkv`)."""
    policies = jax.checkpoint_policies
    saved = _saved_names(config)
    if name == "full":
        return None
    if name.startswith(NAMED_PREFIX):
        return _named_policy(name, config)
    if name == "save_named":
        return policies.save_only_these_names(*saved)
    if name == "offload_named":
        return _offload(list(saved))
    if name == "offload_carries":
        return _offload([LAYER_INPUT])
    if name == "offload_scan":
        return _offload([LAYER_INPUT, LAYER_PARAMS])
    if name.startswith("recompute:"):
        recomputed = RECOMPUTE_LEVELS[int(name.partition(":")[2])]
        kept = [n for n in (*NORM_NAMES, *saved) if n not in recomputed]
        return policies.save_from_both_policies(policies.dots_with_no_batch_dims_saveable,
                                                policies.save_only_these_names(*kept))
    return getattr(policies, name)


def _saved_names(config: TransformerConfig | None) -> tuple[str, ...]:
    """SAVED_NAMES with `qkv` standing for the block's Q/K/V projection name(s)."""
    if config is None:
        return SAVED_NAMES
    return tuple(n for name in SAVED_NAMES
                 for n in (qkv_names(config) if name == "qkv" else (name,)))


def _named_policy(name: str, config: TransformerConfig | None) -> Callable[..., Any]:
    """A per-tensor policy: device names saved, offload names in pinned host memory, the rest
    (remat names and everything unnamed) recomputed. The built-in block's names come from its
    config; a user step's (config None) are the ones its explicit policy lists
    (`spec.step.resolve_step_named` wrote it from the traced step)."""
    names = block_names(config) if config is not None else explicit_named(name)
    choices = decode_named(name, names)
    return jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=names_with(choices, "device"),
        names_which_can_be_offloaded=names_with(choices, "offload"),
        offload_src="device", offload_dst="pinned_host")


def _offload(names: list[str]) -> Callable[..., Any]:
    return jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=[], names_which_can_be_offloaded=names,
        offload_src="device", offload_dst="pinned_host")


def checkpointed(fn: BlockFn, config: Any) -> BlockFn:
    """`fn` under the remat policy `config.remat` (a built-in TransformerConfig, or a user
    step's StepConfig, whose block names are its own: `qkv` stays `qkv`)."""
    block = config if isinstance(config, TransformerConfig) else None
    policy = checkpoint_policy(config.remat, block)
    fn = _named_inputs(fn, config.remat)
    return jax.checkpoint(fn) if policy is None else jax.checkpoint(fn, policy=policy)


def _named_inputs(fn: BlockFn, remat: str) -> BlockFn:
    """`fn` reading its input (and, for offload_scan, its parameters) through checkpoint names."""
    if remat not in CARRY_OFFLOAD_POLICIES:
        return fn

    def named(x: jax.Array, params: Tree) -> jax.Array:
        if remat == "offload_scan":
            params = jax.tree.map(_named_parameter, params)
        return fn(checkpoint_name(x, LAYER_INPUT), params)

    return named


def _named_parameter(array: jax.Array) -> jax.Array:
    """A matrix named for offload; vectors (norm scales, biases) stay on the device: libtpu
    0.0.42.1 aborts offloading a vector slice of an [L, h] host buffer (async_slice_util.cc:605
    "Sublane slicing size not multiple of update chunk sublane size")."""
    return checkpoint_name(array, LAYER_PARAMS) if array.ndim >= 2 else array


def run_unrolled(x: jax.Array, layers: list[Tree], config: TransformerConfig,
                 block_fn: BlockFn) -> jax.Array:
    rematted_fn = checkpointed(block_fn, config) if config.remat != "none" else block_fn
    for index, layer in enumerate(layers):
        with jax.named_scope(f"layer_{index}"):
            x = (rematted_fn if index < config.rematted_layers else block_fn)(x, layer)
    return x


def run_scanned(x: jax.Array, layers: Tree, config: TransformerConfig,
                block_fn: BlockFn) -> jax.Array:
    groups = layer_groups(config)
    stacks = layers if len(groups) > 1 else [layers]
    for group, stack in zip(groups, stacks, strict=True):
        with jax.named_scope(group.scope):
            x = _scan_group(x, stack, group, config, block_fn)
    return x


def _scan_group(x: jax.Array, stack: Tree, group: LayerGroup, config: TransformerConfig,
                block_fn: BlockFn) -> jax.Array:
    if not group.rematted:
        return _scan(block_fn, x, stack)
    return scan_rematted(x, stack, config, block_fn)


def scan_rematted(x: jax.Array, stack: Tree, config: Any, block_fn: BlockFn) -> jax.Array:
    """The layer scan of `block_fn` under `config.remat` (nested when `config.remat_block`):
    what the built-in model's checkpointed groups run, and a user step's `layers.scan`
    (`config` is anything with `remat` and `remat_block`: a TransformerConfig or a StepConfig)."""
    fn = checkpointed(block_fn, config) if config.remat != "none" else block_fn
    if config.remat_block:
        return _nested_scan(x, stack, config, fn)
    return _scan(fn, x, stack)


def _scan(fn: BlockFn, x: jax.Array, stack: Tree) -> jax.Array:
    x, _ = jax.lax.scan(lambda carry, p: (fn(carry, p), None), x, stack)
    return x


def _nested_scan(x: jax.Array, stack: Tree, config: TransformerConfig,
                 rematted_block: BlockFn) -> jax.Array:
    block = config.remat_block
    blocks = jax.tree.map(lambda a: a.reshape(a.shape[0] // block, block, *a.shape[1:]), stack)

    def run_block_of_layers(carry: jax.Array, layer_block: Tree) -> jax.Array:
        return _scan(rematted_block, carry, layer_block)

    return _scan(checkpointed(run_block_of_layers, config), x, blocks)


def run_layers(x: jax.Array, layers: Tree, config: TransformerConfig,
               block_fn: BlockFn) -> jax.Array:
    if config.scan_layers:
        return run_scanned(x, layers, config, block_fn)
    return run_unrolled(x, layers, config, block_fn)
