"""Your own Llama-style model in plain JAX, for `hloscope sweep --step ... --search frontier`.

    hloscope policies --step examples/jax_llama_step.py:make_step
    hloscope sweep --step examples/jax_llama_step.py:make_step --target gpu:h100:1x1x1 \\
        --search frontier --batch 4,8,12,16 --seq 2048 -o OUT_DIR

A decoder written the way a user writes one, not hloscope's built-in transformer: fused QKV
and gate/up projections, its own checkpoint names (`qkv`, `context`, `gate_up`, `mlp_act`),
the layers stacked on a leading axis and run by `jax.lax.scan` over `remat(block)`, bf16
compute over fp32 parameters, a causal softmax attention, a tied embedding and an SGD update.
The parameters are sharded over the mesh's `data` axis (FSDP: XLA gathers each layer's) and
the batch with them. `make_step(remat)` is hloscope's factory (see hloscope.configs.step).
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name
from jax.sharding import NamedSharding, PartitionSpec

LAYERS, D_MODEL, HEADS, D_FF, VOCAB = 16, 2048, 16, 8192, 32768
BATCH, SEQ = 4, 2048
LEARNING_RATE = 1e-3
COMPUTE = jnp.bfloat16

SHAPES = {  # one layer's weights; stacked to [LAYERS, ...]
    "norm_attn": (D_MODEL,), "wqkv": (D_MODEL, 3 * D_MODEL), "wo": (D_MODEL, D_MODEL),
    "norm_mlp": (D_MODEL,), "w_gate_up": (D_MODEL, 2 * D_FF), "w_down": (D_FF, D_MODEL),
}


def _rms_norm(x: jax.Array, scale: jax.Array) -> jax.Array:
    x32 = x.astype(jnp.float32)
    normed = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + 1e-6)
    return (normed * scale).astype(COMPUTE)


def block(x: jax.Array, layer: dict) -> jax.Array:
    """One decoder layer on x [batch, seq, D_MODEL] (bf16)."""
    batch, seq, _ = x.shape
    head_dim = D_MODEL // HEADS
    h = _rms_norm(x, layer["norm_attn"])
    qkv = checkpoint_name(h @ layer["wqkv"].astype(COMPUTE), "qkv")
    q, k, v = (t.reshape(batch, seq, HEADS, head_dim) for t in jnp.split(qkv, 3, axis=-1))
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32) / math.sqrt(head_dim)
    causal = jnp.tril(jnp.ones((seq, seq), dtype=bool))
    probs = jax.nn.softmax(jnp.where(causal, scores, -1e30), axis=-1).astype(COMPUTE)
    context = checkpoint_name(
        jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(batch, seq, D_MODEL), "context")
    x = x + context @ layer["wo"].astype(COMPUTE)
    h = _rms_norm(x, layer["norm_mlp"])
    gate_up = checkpoint_name(h @ layer["w_gate_up"].astype(COMPUTE), "gate_up")
    gate, up = jnp.split(gate_up, 2, axis=-1)
    activated = checkpoint_name(jax.nn.silu(gate) * up, "mlp_act")
    return x + activated @ layer["w_down"].astype(COMPUTE)


def loss_fn(params: dict, tokens: jax.Array, remat) -> jax.Array:
    embedding = params["embedding"].astype(COMPUTE)
    x = embedding[tokens[:, :-1]]
    x, _ = jax.lax.scan(lambda carry, layer: (remat(block)(carry, layer), None), x,
                        params["layers"])
    x = _rms_norm(x, params["norm_out"])
    logits = (x @ embedding.T).astype(jnp.float32)
    targets = jax.nn.one_hot(tokens[:, 1:], VOCAB, dtype=jnp.float32)
    return -jnp.mean(jnp.sum(targets * jax.nn.log_softmax(logits), axis=-1))


def make_step(remat):
    """(train_step, abstract args, jit options): hloscope's factory."""
    mesh = remat.mesh
    batch, seq = remat.batch or BATCH, remat.seq_len or SEQ
    fsdp = NamedSharding(mesh, PartitionSpec(None, "data"))  # [LAYERS, D_MODEL/data, ...]
    replicated = NamedSharding(mesh, PartitionSpec())
    layers = {name: jax.ShapeDtypeStruct((LAYERS, *shape), jnp.float32,
                                         sharding=fsdp if len(shape) == 2 else replicated)
              for name, shape in SHAPES.items()}
    params = {"layers": layers,
              "embedding": jax.ShapeDtypeStruct((VOCAB, D_MODEL), jnp.float32,
                                                sharding=NamedSharding(mesh,
                                                                       PartitionSpec("data"))),
              "norm_out": jax.ShapeDtypeStruct((D_MODEL,), jnp.float32, sharding=replicated)}
    tokens = jax.ShapeDtypeStruct((batch, seq + 1), jnp.int32,
                                  sharding=NamedSharding(mesh, PartitionSpec("data")))

    def train_step(params: dict, tokens: jax.Array):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, remat)
        return jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads), loss

    return train_step, (params, tokens), {"donate_argnums": (0,)}
