"""CPU training steps where XLA's buffer assignment places buffers before its heap simulation.

Run as a script in a child process (JAX stays out of the test process):
`python memory_truth_programs.py DUMP_DIR OUT.json` compiles every program with
`--xla_dump_to=DUMP_DIR --xla_dump_hlo_as_text` (module `jit_<name>`) and writes, per program,
its module name and memory_analysis()'s allocation (arguments + temporaries + outputs - aliased).

- `mlp_sgd_f32` / `mlp_sgd_bf16`: plain SGD (`p - lr * g`, no optimizer state). The update is a
  kLoop fusion `multiply_subtract_fusion(param, dot)` whose output lives out of the step: the
  buffer assigner gives it an output allocation and then moves the dying gradient `dot` into
  that same allocation (MaybeAssignBuffer), so the two are one piece of memory where they meet.
- `mlp_sgd_donated`: the same with the parameters donated (the update in the argument's buffer).
- `scan_{full,names,nothing_bf16}`: a scanned pre-norm MLP-and-attention block trained with
  momentum, under `nothing_saveable` (f32), `save_only_these_names` of its two projections (f32)
  and `nothing_saveable` in bf16: many equal-sized temporaries, whose packing decides the heap.
"""
from __future__ import annotations

import json
import os
import sys

PROGRAMS = ("mlp_sgd_f32", "mlp_sgd_bf16", "mlp_sgd_donated", "scan_full", "scan_names",
            "scan_nothing_bf16")
DONATED = {"mlp_sgd_donated": (0,)}


def programs():
    import jax
    import jax.numpy as jnp
    from jax.ad_checkpoint import checkpoint_name

    policies = jax.checkpoint_policies

    def spec(shape, dtype):
        return jax.ShapeDtypeStruct(shape, dtype)

    def mlp_sgd(dtype, width=1024, depth=3, rows=256):
        def loss(params, batch):
            h = batch["x"]
            for w in params:
                h = jnp.tanh(h @ w)
            return jnp.mean((h.astype(jnp.float32) - batch["y"]) ** 2)

        def step(params, batch):
            grads = jax.grad(loss)(params, batch)
            return [p - (0.01 * g).astype(p.dtype) for p, g in zip(params, grads, strict=True)]
        params = [spec((width, width), dtype) for _ in range(depth)]
        batch = {"x": spec((rows, width), dtype), "y": spec((rows, width), jnp.float32)}
        return step, (params, batch)

    def scan(policy, dtype, d=256, hidden=512, seq=128, batch=4, layers=4, heads=4):
        def norm(x):
            x32 = x.astype(jnp.float32)
            return (x32 * jax.lax.rsqrt(jnp.mean(x32 ** 2, -1, keepdims=True) + 1e-6)
                    ).astype(x.dtype)

        def block(x, p):
            b, s, _ = x.shape
            h = norm(x)
            q, k, v = (t.reshape(b, s, heads, d // heads) for t in
                       (h @ p["wq"], h @ p["wk"], h @ p["wv"]))
            scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(d // heads)
            probs = jax.nn.softmax(scores.astype(jnp.float32), -1).astype(x.dtype)
            out = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, s, d)
            x = x + checkpoint_name(out @ p["wo"], "attn_out")
            h = norm(x)
            up = checkpoint_name(jax.nn.silu(h @ p["w_up"]), "mlp_up")
            return x + up @ p["w_down"], None

        body = jax.checkpoint(block, policy=policy)

        def loss(params, batch):
            x, _ = jax.lax.scan(body, batch["x"], params["layers"])
            return jnp.mean(x.astype(jnp.float32) ** 2)

        def step(params, mu, batch):
            grads = jax.grad(loss)(params, batch)
            mu = jax.tree_util.tree_map(lambda m, g: 0.9 * m + g.astype(m.dtype), mu, grads)
            params = jax.tree_util.tree_map(lambda p, m: p - (0.01 * m).astype(p.dtype),
                                            params, mu)
            return params, mu
        shapes = {"wq": (d, d), "wk": (d, d), "wv": (d, d), "wo": (d, d), "w_up": (d, hidden),
                  "w_down": (hidden, d)}
        params = {"layers": {k: spec((layers, *s), dtype) for k, s in shapes.items()}}
        mu = {"layers": {k: spec((layers, *s), jnp.float32) for k, s in shapes.items()}}
        return step, (params, mu, {"x": spec((batch, seq, d), dtype)})

    return {
        "mlp_sgd_f32": lambda: mlp_sgd(jnp.float32),
        "mlp_sgd_bf16": lambda: mlp_sgd(jnp.bfloat16),
        "mlp_sgd_donated": lambda: mlp_sgd(jnp.float32),
        "scan_full": lambda: scan(policies.nothing_saveable, jnp.float32),
        "scan_names": lambda: scan(policies.save_only_these_names("attn_out", "mlp_up"),
                                   jnp.float32),
        "scan_nothing_bf16": lambda: scan(policies.nothing_saveable, jnp.bfloat16),
    }


def describe(name, build) -> dict:
    import jax

    fn, args = build()
    fn.__name__ = fn.__qualname__ = name
    compiled = jax.jit(fn, donate_argnums=DONATED.get(name, ())).lower(*args).compile()
    analysis = compiled.memory_analysis()
    allocation = (analysis.argument_size_in_bytes + analysis.temp_size_in_bytes
                  + analysis.output_size_in_bytes - analysis.alias_size_in_bytes)
    return {"module": f"jit_{name}", "allocation_bytes": allocation}


def main() -> None:
    dump, out = sys.argv[1], sys.argv[2]
    os.environ["XLA_FLAGS"] = f"--xla_dump_to={dump} --xla_dump_hlo_as_text"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    built = programs()
    described = {name: describe(name, built[name]) for name in PROGRAMS}
    with open(out, "w") as handle:
        json.dump(described, handle, indent=1)


if __name__ == "__main__":
    main()
