"""Small JAX programs compiled on the CPU with XLA's memory dumps, for the memory tests.

Run as a script in a child process (JAX stays out of the test process):
`python memory_programs.py DUMP_DIR OUT.json [SEED]` compiles every program with
`--xla_dump_to=DUMP_DIR --xla_dump_hlo_as_text` (each program's module is `jit_<name>`) and
writes, per program, JAX's own account of it: the residuals the backward pass saves
(`saved_residuals`, for saved-activation categories) and, per flattened argument, which
top-level argument it belongs to (for parameter / optimizer state / input categories).

The programs vary what a liveness analysis must get right: MLPs in f32 and bf16, attention,
scans (while loops with dynamic-update-slices), several remat policies, donated (aliased)
arguments, a while loop with a conditional inside, and an embedding gradient (scatter). The
families are fixed; a seed (default `SEED`) picks the widths, depths and batch sizes of the
later families (scans under every remat policy family, a convolution net, a Llama-like block,
scans under the names-based policies `save_only_these_names` and
`save_and_offload_only_these_names`),
so another seed gives held-out programs of the same families.
"""
from __future__ import annotations

import json
import os
import random
import sys

ARGUMENT_ROLES = {"params": "parameter", "opt_state": "optimizer state", "batch": "input"}
SEED = 17
SCAN_POLICIES = ("nothing_saveable", "checkpoint_dots", "dots_with_no_batch_dims_saveable",
                 "everything_saveable")


def programs(seed: int = SEED):  # noqa: C901  (one closure per program keeps each readable)
    import jax
    import jax.numpy as jnp

    policies = jax.checkpoint_policies
    tree_map = jax.tree_util.tree_map

    def init(shapes, dtype):
        return [jax.ShapeDtypeStruct(shape, dtype) for shape in shapes]

    def ones(shape, dtype):
        return jax.ShapeDtypeStruct(shape, dtype)

    def train_step(loss):
        def step(params, opt_state, batch):
            value, grads = jax.value_and_grad(loss)(params, batch)
            with jax.named_scope("optimizer"):
                mu = tree_map(lambda m, g: 0.9 * m + g.astype(m.dtype), opt_state["mu"], grads)
                params = tree_map(lambda p, m: p - (0.01 * m).astype(p.dtype), params, mu)
            return params, {"mu": mu}, value
        return step

    def state(params):
        return {"mu": tree_map(lambda p: ones(p.shape, jnp.float32), params)}

    def mlp_loss(block=None):
        def layer(h, wb):
            w, b = wb
            return jnp.tanh(h @ w + b)
        wrapped = block(layer) if block else layer

        def loss(params, batch):
            h = batch["x"]
            for i, wb in enumerate(params):
                with jax.named_scope(f"layer_{i}"):
                    h = wrapped(h, wb)
            return jnp.mean((h.astype(jnp.float32) - batch["y"]) ** 2)
        return loss

    def mlp(dtype, block=None, width=128, depth=3, rows=512):
        params = [tuple(init([(width, width), (width,)], dtype)) for _ in range(depth)]
        batch = {"x": ones((rows, width), dtype), "y": ones((rows, width), jnp.float32)}
        loss = mlp_loss(block)
        return train_step(loss), (params, state(params), batch), loss

    def attention_loss(params, batch):
        x = batch["x"]
        b, s, d = x.shape
        heads = 4

        def split(t):
            return t.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3)
        for i, (wq, wk, wv, wo) in enumerate(params):
            with jax.named_scope(f"layer_{i}"):
                q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
                scores = q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(d // heads)
                mask = jnp.tril(jnp.ones((s, s), bool))
                probs = jax.nn.softmax(jnp.where(mask, scores, -1e9), axis=-1)
                out = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, d)
                x = x + out @ wo
        return jnp.mean(x ** 2)

    def attention():
        params = [tuple(init([(64, 64)] * 4, jnp.float32)) for _ in range(2)]
        batch = {"x": ones((4, 64, 64), jnp.float32)}
        return (train_step(attention_loss), (params, state(params), batch), attention_loss)

    def scan_loss(params, batch):
        def step(h, w):
            return jnp.tanh(h @ w) + h, None
        with jax.named_scope("layers"):
            h = jax.lax.scan(step, batch["x"], params["stack"])[0]
        return jnp.mean(h ** 2)

    def scan_layers():
        params = {"stack": init([(4, 128, 128)], jnp.float32)[0]}
        batch = {"x": ones((64, 128), jnp.float32)}
        return train_step(scan_loss), (params, state(params), batch), scan_loss

    def embedding_loss(params, batch):
        h = params["table"][batch["tokens"]] @ params["proj"]
        return jnp.mean(jnp.tanh(h) ** 2)

    def embedding():
        params = {"table": init([(512, 64)], jnp.bfloat16)[0],
                  "proj": init([(64, 64)], jnp.bfloat16)[0]}
        batch = {"tokens": ones((8, 32), jnp.int32)}
        return train_step(embedding_loss), (params, state(params), batch), embedding_loss

    def loop_with_conditional():
        def run(params, batch):
            w = params["w"]

            def body(i, h):
                return jax.lax.cond(i % 3 == 0, lambda t: jnp.tanh(t @ w),
                                    lambda t: jnp.sin(t @ w.T) * 2.0, h)
            return jax.lax.fori_loop(0, 5, body, batch["x"])
        arguments = ({"w": ones((128, 128), jnp.float32)}, {"x": ones((64, 128), jnp.float32)})
        return run, arguments, None

    def checkpointed(policy):
        return lambda layer: jax.checkpoint(layer, policy=policy)

    rng = random.Random(seed)

    def scan_remat(policy_name):
        width, depth, rows = rng.choice((64, 128)), rng.choice((3, 4)), rng.choice((32, 64))
        policy = getattr(policies, policy_name)

        def loss(params, batch):
            def step(h, w):
                return jnp.tanh(h @ w) * 0.5 + h, None
            body = jax.checkpoint(step, policy=policy)
            with jax.named_scope("layers"):
                h = jax.lax.scan(body, batch["x"], params["stack"])[0]
            return jnp.mean(h ** 2)
        params = {"stack": ones((depth, width, width), jnp.float32)}
        batch = {"x": ones((rows, width), jnp.float32)}
        return train_step(loss), (params, state(params), batch), loss

    def scan_named(policy):
        """A scan whose step names its matmul (`checkpoint_name`) for a names-based policy."""
        from jax.ad_checkpoint import checkpoint_name
        width, depth, rows = rng.choice((64, 128)), rng.choice((3, 4)), rng.choice((32, 64))

        def loss(params, batch):
            def step(h, w):
                return jnp.tanh(checkpoint_name(h @ w, "projection")) * 0.5 + h, None
            with jax.named_scope("layers"):
                h = jax.lax.scan(jax.checkpoint(step, policy=policy), batch["x"],
                                 params["stack"])[0]
            return jnp.mean(h ** 2)
        params = {"stack": ones((depth, width, width), jnp.float32)}
        batch = {"x": ones((rows, width), jnp.float32)}
        return train_step(loss), (params, state(params), batch), loss

    def convolution():
        channels, size = rng.choice((8, 16)), rng.choice((16, 32))

        def loss(params, batch):
            h = batch["images"]
            for i, w in enumerate(params):
                with jax.named_scope(f"layer_{i}"):
                    h = jax.nn.relu(jax.lax.conv_general_dilated(
                        h, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))
            return jnp.mean(h ** 2)
        params = [ones((3, 3, 3, channels), jnp.float32),
                  ones((3, 3, channels, channels), jnp.float32)]
        batch = {"images": ones((4, size, size, 3), jnp.float32)}
        return train_step(loss), (params, state(params), batch), loss

    def llama_block():
        d, heads, seq = rng.choice((64, 128)), 4, rng.choice((32, 64))
        hidden = 2 * d

        def rms(x, g):
            x32 = x.astype(jnp.float32)
            return (x32 * jax.lax.rsqrt(jnp.mean(x32 ** 2, -1, keepdims=True) + 1e-6)
                    ).astype(x.dtype) * g

        def loss(params, batch):
            x = batch["x"]
            b, s, _ = x.shape
            p = params
            with jax.named_scope("layer_0"):
                h = rms(x, p["attn_norm"])
                q, k, v = (t.reshape(b, s, heads, d // heads) for t in
                           (h @ p["wq"], h @ p["wk"], h @ p["wv"]))
                scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(d // heads)
                mask = jnp.tril(jnp.ones((s, s), bool))
                probs = jax.nn.softmax(jnp.where(mask, scores, -1e9).astype(jnp.float32), -1)
                out = jnp.einsum("bhqk,bkhd->bqhd", probs.astype(x.dtype), v).reshape(b, s, d)
                x = x + out @ p["wo"]
                h = rms(x, p["mlp_norm"])
                x = x + (jax.nn.silu(h @ p["w_gate"]) * (h @ p["w_up"])) @ p["w_down"]
            return jnp.mean(x.astype(jnp.float32) ** 2)
        bf16 = jnp.bfloat16
        params = {"attn_norm": ones((d,), bf16), "mlp_norm": ones((d,), bf16),
                  "wq": ones((d, d), bf16), "wk": ones((d, d), bf16), "wv": ones((d, d), bf16),
                  "wo": ones((d, d), bf16), "w_gate": ones((d, hidden), bf16),
                  "w_up": ones((d, hidden), bf16), "w_down": ones((hidden, d), bf16)}
        batch = {"x": ones((2, seq, d), bf16)}
        return train_step(loss), (params, state(params), batch), loss

    return {
        "mlp_f32": lambda: mlp(jnp.float32),
        "mlp_bf16_donated": lambda: mlp(jnp.bfloat16),
        "attention": attention,
        "scan_layers": scan_layers,
        "remat_full": lambda: mlp(jnp.float32, checkpointed(policies.nothing_saveable)),
        "remat_dots": lambda: mlp(jnp.float32, checkpointed(policies.checkpoint_dots)),
        "remat_dots_no_batch_bf16": lambda: mlp(
            jnp.bfloat16, checkpointed(policies.dots_with_no_batch_dims_saveable)),
        "embedding_bf16_donated": embedding,
        "loop_with_conditional": loop_with_conditional,
        **{f"scan_{name}": (lambda name=name: scan_remat(name)) for name in SCAN_POLICIES},
        "convolution": convolution,
        "llama_block_bf16_donated": llama_block,
        # Drawn last, so the programs above keep their shapes. On the CPU jax compiles the
        # offload policy without host memory (no S(5) buffer, no host transfer in the HLO):
        # the named value is simply saved, so the program checks the policy, not offloading.
        "scan_save_only_these_names": lambda: scan_named(
            policies.save_only_these_names("projection")),
        "scan_save_and_offload_only_these_names": lambda: scan_named(
            policies.save_and_offload_only_these_names(
                names_which_can_be_saved=[], names_which_can_be_offloaded=["projection"],
                offload_src="device", offload_dst="pinned_host")),
    }


DONATED = {"mlp_bf16_donated": (0, 1), "embedding_bf16_donated": (0, 1),
           "llama_block_bf16_donated": (0, 1), "scan_checkpoint_dots": (0, 1),
           "scan_save_only_these_names": (0, 1)}


def describe(name, build):
    import jax
    from jax._src.ad_checkpoint import saved_residuals

    fn, args, loss = build()
    fn.__name__ = fn.__qualname__ = name
    compiled = jax.jit(fn, donate_argnums=DONATED.get(name, ())).lower(*args).compile()
    analysis = compiled.memory_analysis()
    allocation = (analysis.argument_size_in_bytes + analysis.temp_size_in_bytes
                  + analysis.output_size_in_bytes - analysis.alias_size_in_bytes)
    names = ("params", "opt_state", "batch") if loss is not None else ("params", "batch")
    roles = []
    for role, arg in zip(names, args, strict=True):
        roles += [ARGUMENT_ROLES[role]] * len(jax.tree_util.tree_leaves(arg))
    residuals = [] if loss is None else [
        [str(aval.dtype), list(aval.shape), source]
        for aval, source in saved_residuals(loss, args[0], args[2])]
    return {"module": f"jit_{name}", "argument_categories": roles, "residuals": residuals,
            "donated": name in DONATED, "allocation_bytes": allocation}


def main(dump_dir: str, out_path: str, seed: int = SEED) -> None:
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ["XLA_FLAGS"] = f"--xla_dump_to={dump_dir} --xla_dump_hlo_as_text"
    found = {name: describe(name, build) for name, build in programs(seed).items()}
    with open(out_path, "w") as handle:
        json.dump(found, handle, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(int(a) for a in sys.argv[3:4]))
