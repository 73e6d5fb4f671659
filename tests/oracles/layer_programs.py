"""Two-layer JAX training steps compiled on the CPU, with JAX's own account of what each saves.

Run as a script in a child process (JAX stays out of the test process):
`python layer_programs.py DUMP_DIR OUT.json` compiles every program with
`--xla_dump_to=DUMP_DIR --xla_dump_hlo_as_text` (module `jit_<name>`) and writes, per program,
the residuals `jax._src.ad_checkpoint.saved_residuals` (what `jax.ad_checkpoint.
print_saved_residuals` prints; a private API, used as a test oracle only) says the backward
pass saves: dtype, shape, bytes, where it comes from (`output of <primitive>`, `named '<name>'`,
`from the argument ...`) and its source line.

The block is a small pre-norm transformer layer in f32 (f32 so that XLA's CPU backend keeps
each residual in JAX's dtype): a fused q/k/v projection split in three (`jnp.split`, the
`split` the issue names), causal attention, a tanh MLP, residual adds. Two layers, unrolled under
`jax.named_scope("layer_<i>")` or scanned (`lax.scan` under `jax.named_scope("layers")`), each
under one remat family: none, full (`nothing_saveable`), `checkpoint_dots`,
`dots_with_no_batch_dims_saveable`, and offload (the block's named `mlp_hidden` offloaded to
pinned host memory, `attn_out` saved). The families are fixed; nothing is random.
"""
from __future__ import annotations

import json
import os
import sys

LINE_MARK = "layer_programs.py:"
POLICIES = ("none", "full", "dots", "dots_no_batch", "offload")
BATCH, SEQ, D, HEADS, HIDDEN, LAYERS = 2, 16, 32, 2, 64, 2


def _policy(name: str):
    import jax

    policies = jax.checkpoint_policies
    return {
        "full": policies.nothing_saveable,
        "dots": policies.checkpoint_dots,
        "dots_no_batch": policies.dots_with_no_batch_dims_saveable,
        "offload": policies.save_and_offload_only_these_names(
            names_which_can_be_saved=["attn_out"], names_which_can_be_offloaded=["mlp_hidden"],
            offload_src="device", offload_dst="pinned_host"),
    }.get(name)


def block(x, p):
    """One layer; each op that JAX may save is on its own line (the residuals' source lines)."""
    import jax
    import jax.numpy as jnp
    from jax.ad_checkpoint import checkpoint_name

    b, s, d = x.shape
    h = x - jnp.mean(x, -1, keepdims=True)
    qkv = h @ p["qkv"]
    q, k, v = jnp.split(qkv, 3, axis=-1)
    q = q.reshape(b, s, HEADS, d // HEADS)
    k = k.reshape(b, s, HEADS, d // HEADS)
    v = v.reshape(b, s, HEADS, d // HEADS)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k)
    mask = jnp.tril(jnp.ones((s, s), bool))
    probs = jax.nn.softmax(jnp.where(mask, scores, -1e9), axis=-1)
    attn = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, s, d)
    attn = checkpoint_name(attn @ p["out"], "attn_out")
    x = x + attn
    hidden = checkpoint_name(jnp.tanh(x @ p["fc"]), "mlp_hidden")
    return x + hidden @ p["proj"]


def programs():
    import jax
    import jax.numpy as jnp

    shapes = {"qkv": (D, 3 * D), "out": (D, D), "fc": (D, HIDDEN), "proj": (HIDDEN, D)}

    def wrapped(policy_name: str):
        policy = _policy(policy_name)
        return block if policy_name == "none" else jax.checkpoint(block, policy=policy)

    def unrolled_loss(policy_name: str):
        layer = wrapped(policy_name)

        def loss(params, x):
            for i, p in enumerate(params):
                with jax.named_scope(f"layer_{i}"):
                    x = layer(x, p)
            return jnp.mean(x ** 2)
        params = [{k: jax.ShapeDtypeStruct(s, jnp.float32) for k, s in shapes.items()}
                  for _ in range(LAYERS)]
        return loss, params

    def scanned_loss(policy_name: str):
        layer = wrapped(policy_name)

        def loss(params, x):
            with jax.named_scope("layers"):
                x = jax.lax.scan(lambda h, p: (layer(h, p), None), x, params)[0]
            return jnp.mean(x ** 2)
        params = {k: jax.ShapeDtypeStruct((LAYERS, *s), jnp.float32) for k, s in shapes.items()}
        return loss, params

    found = {}
    for policy in POLICIES:
        found[f"unrolled_{policy}"] = unrolled_loss(policy)
        found[f"scanned_{policy}"] = scanned_loss(policy)
    return found


def describe(name: str, loss, params) -> dict:
    import jax
    import jax.numpy as jnp
    from jax._src.ad_checkpoint import saved_residuals

    x = jax.ShapeDtypeStruct((BATCH, SEQ, D), jnp.float32)

    def step(params, x):
        value, grads = jax.value_and_grad(loss)(params, x)
        return value, jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)
    step.__name__ = step.__qualname__ = name
    jax.jit(step).lower(params, x).compile()
    residuals = []
    for aval, source in saved_residuals(loss, params, x):
        line = source.split(LINE_MARK, 1)[1].split(":", 1)[0] if LINE_MARK in source else None
        residuals.append({
            "dtype": str(aval.dtype), "shape": list(aval.shape),
            "bytes": int(aval.size) * aval.dtype.itemsize,
            "kind": str(getattr(aval, "memory_space", "")).rsplit(".", 1)[-1].lower(),
            "source": source.split(" from ", 1)[0] if " from " in source else source,
            "line": int(line) if line else None})
    return {"module": f"jit_{name}", "residuals": residuals}


def main(dump_dir: str, out_path: str) -> None:
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ["XLA_FLAGS"] = f"--xla_dump_to={dump_dir} --xla_dump_hlo_as_text"
    found = {name: describe(name, *built) for name, built in programs().items()}
    with open(out_path, "w") as handle:
        json.dump(found, handle, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
