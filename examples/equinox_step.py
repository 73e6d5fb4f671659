"""Your own model in hloscope: an Equinox train step, swept over remat policies.

    hloscope sweep --step examples/equinox_step.py:make_step --target cpu \\
        --policies none,full,dots_saveable,dots_with_no_batch_dims_saveable -o OUT_DIR

`make_step(remat)` takes only the first hook: the layers are an `eqx.filter_vmap`-stacked
`Block` (one [L, ...] array per weight) that the model runs itself with `jax.lax.scan`, each
block wrapped by `remat(block)` (`jax.checkpoint` with the variant's policy). Without the second
parameter (`layers`) the structural variants (nested:B, offload_carries) are refused before
anything compiles. `unrolled=True` runs the layers in a Python loop (the tests' FLOP oracle).

Needs `pip install 'hloscope[models]'` (equinox).
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name
from jax.sharding import NamedSharding, PartitionSpec

LAYERS, WIDTH, HIDDEN = 4, 64, 256
BATCH, SEQ = 4, 32
LEARNING_RATE = 1e-2


class Block(eqx.Module):
    """x + relu(x W1) W2, no biases or norms (as examples/flax_step.py's block)."""

    up: eqx.nn.Linear
    down: eqx.nn.Linear

    def __init__(self, key: jax.Array) -> None:
        first, second = jax.random.split(key)
        self.up = eqx.nn.Linear(WIDTH, HIDDEN, use_bias=False, key=first)
        self.down = eqx.nn.Linear(HIDDEN, WIDTH, use_bias=False, key=second)

    def __call__(self, x: jax.Array) -> jax.Array:
        hidden = checkpoint_name(x @ self.up.weight.T, "hidden")
        activated = checkpoint_name(jax.nn.relu(hidden), "activated")
        return x + activated @ self.down.weight.T


class Model(eqx.Module):
    """A stem projection (a parameter before the layers: see examples/flax_step.py), then the
    stacked blocks."""

    stem: eqx.nn.Linear
    layers: Block  # every array stacked on a leading [LAYERS] axis

    def __init__(self, key: jax.Array) -> None:
        stem, layers = jax.random.split(key)
        self.stem = eqx.nn.Linear(WIDTH, WIDTH, use_bias=False, key=stem)
        self.layers = eqx.filter_vmap(Block)(jax.random.split(layers, LAYERS))

    def __call__(self, x: jax.Array, remat, unrolled: bool = False) -> jax.Array:
        stacked, static = eqx.partition(self.layers, eqx.is_array)
        x = x @ self.stem.weight.T

        def block(carry: jax.Array, layer) -> jax.Array:
            return eqx.combine(layer, static)(carry)

        if unrolled:
            for index in range(LAYERS):
                x = block(x, jax.tree.map(lambda leaf, i=index: leaf[i], stacked))
            return x
        x, _ = jax.lax.scan(lambda carry, layer: (remat(block)(carry, layer), None), x,
                            stacked)
        return x


def make_step(remat, unrolled: bool = False):
    """(train_step, abstract args, jit options): hloscope's factory (see hloscope.configs.step)."""
    # the key is made inside eval_shape: a deviceless TPU cannot hold a concrete array
    model = eqx.filter_eval_shape(lambda: Model(jax.random.key(0)))
    batch, seq = remat.batch or BATCH, remat.seq_len or SEQ
    sharding = NamedSharding(remat.mesh, PartitionSpec("data"))
    x = jax.ShapeDtypeStruct((batch, seq, WIDTH), jnp.float32, sharding=sharding)

    def train_step(model: Model, x: jax.Array):
        def loss_fn(model: Model) -> jax.Array:
            return jnp.mean(model(x, remat, unrolled) ** 2)

        loss, grads = jax.value_and_grad(loss_fn)(model)
        return jax.tree.map(lambda p, g: p - LEARNING_RATE * g, model, grads), loss

    return train_step, (model, x), {"donate_argnums": (0,)}
