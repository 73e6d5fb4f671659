"""Your own model in hloscope: a Flax NNX train step, swept over remat policies.

    hloscope sweep --step examples/flax_step.py:make_step --target cpu \\
        --policies none,full,dots_saveable,nested:2 -o OUT_DIR
    python examples/flax_step.py [TARGET]      # the same through hloscope.sweep

`make_step(remat, layers)` builds the model, the loss and an SGD train step; hloscope calls it
once per remat variant, in the compile's child process. The layers are stacked (created under
`nnx.vmap`, one [L, ...] parameter per weight) and run by `layers.scan`, hloscope's layer scan:
a `jax.lax.scan` over the stack whose block is wrapped in `jax.checkpoint` with the variant's
policy (and nested two levels deep for `nested:B`). Each block names its activations with
`checkpoint_name`. `unrolled=True` runs the layers in a Python loop instead (no scan, no remat):
the tests compile it to check the scanned program's FLOPs against XLA's.

Needs `pip install 'hloscope[models]'` (flax).
"""
from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
from flax import nnx
from jax.ad_checkpoint import checkpoint_name
from jax.sharding import NamedSharding, PartitionSpec

LAYERS, WIDTH, HIDDEN = 4, 64, 256  # d_model, MLP width
BATCH, SEQ = 4, 32
LEARNING_RATE = 1e-2


class Block(nnx.Module):
    """x + relu(x W1) W2: an MLP residual block without biases or norms (its FLOPs and what its
    backward pass reads have simple closed forms)."""

    def __init__(self, rngs: nnx.Rngs) -> None:
        self.up = nnx.Linear(WIDTH, HIDDEN, use_bias=False, rngs=rngs)
        self.down = nnx.Linear(HIDDEN, WIDTH, use_bias=False, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        hidden = checkpoint_name(self.up(x), "hidden")
        activated = checkpoint_name(jax.nn.relu(hidden), "activated")
        return x + self.down(activated)


class Model(nnx.Module):
    """A stem projection, then the stacked blocks. The stem is a parameter before the layers,
    so the backward pass needs the first layer's input gradient (unrolled, XLA would otherwise
    drop that matmul; a scan's body cannot)."""

    def __init__(self, rngs: nnx.Rngs) -> None:
        self.stem = nnx.Linear(WIDTH, WIDTH, use_bias=False, rngs=rngs)

        @nnx.split_rngs(splits=LAYERS)
        @nnx.vmap(in_axes=(0,), out_axes=0)
        def stacked(rngs: nnx.Rngs) -> Block:
            return Block(rngs)

        self.layers = stacked(rngs)


def forward(model: Model, x: jax.Array, scan, unrolled: bool = False) -> jax.Array:
    """The stacked layers over x: by `scan(block, x, stacked_state)`, or a Python loop."""
    graphdef, state = nnx.split(model.layers)
    x = model.stem(x)

    def block(carry: jax.Array, layer_state) -> jax.Array:
        return nnx.merge(graphdef, layer_state)(carry)

    if unrolled:
        for index in range(LAYERS):
            x = block(x, jax.tree.map(lambda leaf, i=index: leaf[i], state))
        return x
    return scan(block, x, state)


def make_step(remat, layers=None, unrolled: bool = False):
    """(train_step, abstract args): hloscope's factory (see hloscope.configs.step)."""
    abstract = nnx.eval_shape(lambda: Model(nnx.Rngs(0)))
    graphdef, params = nnx.split(abstract)
    batch = remat.batch or BATCH
    seq = remat.seq_len or SEQ
    sharding = NamedSharding(remat.mesh, PartitionSpec("data"))
    x = jax.ShapeDtypeStruct((batch, seq, WIDTH), jnp.float32, sharding=sharding)
    scan = layers.scan if layers is not None else _own_scan(remat)

    def train_step(params, x):
        def loss_fn(params):
            model = nnx.merge(graphdef, params)
            return jnp.mean(forward(model, x, scan, unrolled) ** 2)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        return jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads), loss

    return train_step, (params, x), {"donate_argnums": (0,)}


def _own_scan(remat):
    def scan(block, x, stacked):
        x, _ = jax.lax.scan(lambda carry, p: (remat(block)(carry, p), None), x, stacked)
        return x

    return scan


def main(target: str) -> None:
    import tempfile

    import hloscope

    with tempfile.TemporaryDirectory() as folder:
        result = hloscope.sweep(make_step, policies=["none", "full", "dots_saveable", "nested:2"],
                                target=target, output=folder, force=True, batch=BATCH,
                                seq_len=SEQ)
        print(result.to_pandas()[["variant", "outcome", "reason"]].to_string())
        print("winner:", result.winner)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cpu")
