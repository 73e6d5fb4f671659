"""Small JAX train steps compiled deviceless for one TPU v5e chip, with libtpu's memory dumps.

Run as a script in a child process (it imports jax and loads libtpu):
`python tpu_memory_programs.py DUMP_DIR OUT.json [SEED] [NAME ...]` compiles each program with
`--xla_dump_to=DUMP_DIR --xla_dump_hlo_as_text` (module `jit_<name>`: the after-optimizations
text and its buffer assignment) and writes, per program, libtpu's `memory_analysis()` fields.

The families are fixed (an f32 MLP without remat, a bf16 MLP under full remat with donated
state, a scan over stacked layers under `dots_with_no_batch_dims_saveable` with its parameters
and optimizer state donated, with only its parameters donated and with nothing donated, bf16
attention under `checkpoint_dots`, a program returning more than 128 arrays, one small enough
that every temporary sits in on-chip VMEM, a forward-only scan of fixed shape, and the donated
scan at two fixed shapes where values cross between HBM and VMEM at the loops); a seed
(default `SEED`) picks widths, depths and batch sizes, so another seed gives held-out programs
of the same families (draws are made in the order of `programs()`, so a subset of names draws
other shapes). Sizes are chosen so that some activations exceed VMEM and land in HBM, where
`memory_analysis()` counts them; each compile takes seconds (a scan up to a minute).
"""
from __future__ import annotations

import json
import os
import random
import sys

SEED = 17
DONATED = {"mlp_bf16_remat_full_donated": (0, 1), "scan_dots_no_batch_donated": (0, 1),
           "scan_dots_no_batch_params_donated": (0,), "scan_dots_no_batch_wide_donated": (0, 1),
           "scan_dots_no_batch_tall_donated": (0, 1)}


def programs(seed: int = SEED):  # noqa: C901  (one closure per program keeps each readable)
    import jax
    import jax.numpy as jnp

    policies = jax.checkpoint_policies
    tree_map = jax.tree_util.tree_map
    rng = random.Random(seed)

    def spec(shape, dtype):
        return jax.ShapeDtypeStruct(shape, dtype)

    def train_step(loss):
        def step(params, opt_state, batch):
            value, grads = jax.value_and_grad(loss)(params, batch)
            mu = tree_map(lambda m, g: 0.9 * m + g.astype(m.dtype), opt_state["mu"], grads)
            params = tree_map(lambda p, m: p - (0.01 * m).astype(p.dtype), params, mu)
            return params, {"mu": mu}, value
        return step

    def state(params):
        return {"mu": tree_map(lambda p: spec(p.shape, jnp.float32), params)}

    def mlp(dtype, policy=None, rows=None, width=None, depth=None):
        rows = rows or rng.choice((4096, 8192))
        width = width or rng.choice((1024, 2048))
        depth = depth or rng.choice((2, 3))

        def layer(h, w):
            return jnp.tanh(h @ w)
        block = jax.checkpoint(layer, policy=policy) if policy else layer

        def loss(params, batch):
            h = batch["x"]
            for w in params:
                h = block(h, w)
            return jnp.mean(h.astype(jnp.float32) ** 2)
        params = [spec((width, width), dtype) for _ in range(depth)]
        return train_step(loss), (params, state(params), {"x": spec((rows, width), dtype)})

    def scan_layers(rows=None, width=None, depth=None):
        rows, width = rows or rng.choice((4096, 8192)), width or rng.choice((1024, 2048))
        depth = depth or rng.choice((3, 4))
        policy = policies.dots_with_no_batch_dims_saveable

        def loss(params, batch):
            def step(h, w):
                return jnp.tanh(h @ w) + h, None
            h = jax.lax.scan(jax.checkpoint(step, policy=policy), batch["x"], params["stack"])[0]
            return jnp.mean(h ** 2)
        params = {"stack": spec((depth, width, width), jnp.float32)}
        return train_step(loss), (params, state(params), {"x": spec((rows, width), jnp.float32)})

    def attention():
        batch, seq, heads = rng.choice((8, 16)), rng.choice((512, 1024)), 4
        d = 256

        def layer(x, w):
            b, s, _ = x.shape
            q, k, v = (t.reshape(b, s, heads, d // heads) for t in (x @ w[0], x @ w[1], x @ w[2]))
            scores = jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32)
            probs = jax.nn.softmax(scores, -1).astype(x.dtype)
            return x + jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, s, d)
        block = jax.checkpoint(layer, policy=policies.checkpoint_dots)

        def loss(params, data):
            x = data["x"]
            for w in params:
                x = block(x, w)
            return jnp.mean(x.astype(jnp.float32) ** 2)
        params = [spec((3, d, d), jnp.bfloat16) for _ in range(2)]
        data = {"x": spec((batch, seq, d), jnp.bfloat16)}
        return train_step(loss), (params, state(params), data)

    def many_outputs():
        count = rng.choice((150, 200))

        def run(x):
            return [x * i for i in range(count)]
        return run, (spec((rng.choice((256, 512)), 128), jnp.float32),)

    def all_in_vmem():
        return mlp(jnp.float32, rows=256, width=256, depth=2)

    def forward_scan():
        def run(stack, x):
            return jax.lax.scan(lambda h, w: (jnp.tanh(h @ w) + h, None), x, stack)[0]
        return run, (spec((3, 1024, 1024), jnp.float32), spec((4096, 1024), jnp.float32))

    return {
        "mlp_f32": lambda: mlp(jnp.float32),
        "mlp_bf16_remat_full_donated": lambda: mlp(jnp.bfloat16, policies.nothing_saveable),
        "scan_dots_no_batch_donated": scan_layers,
        "attention_bf16_checkpoint_dots": attention,
        "many_outputs": many_outputs,
        "all_in_vmem": all_in_vmem,
        # The same scan with less donated: XLA then places the weight gradient in an output's
        # allocation, not the heap. Drawn last, so the families above keep their shapes; rows
        # and width fixed at 4096 x 1024.
        "scan_dots_no_batch": lambda: scan_layers(4096, 1024),
        "scan_dots_no_batch_params_donated": lambda: scan_layers(4096, 1024),
        "forward_scan": forward_scan,  # no gradient: its HBM heap holds the loop's predicate
        # Fixed shapes where libtpu moves values between HBM and VMEM around the loops: at width
        # 2048 the input gradient is made in HBM and prefetched into VMEM as the backward loop's
        # initial carry; on 8192 rows the backward body evicts its bf16 weights carry to HBM and
        # prefetches each layer's slice (memory_analysis() counts those buffers twice; the
        # buffer assignment, which test_heap_tpu.py compares with, once).
        "scan_dots_no_batch_wide_donated": lambda: scan_layers(4096, 2048, 3),
        "scan_dots_no_batch_tall_donated": lambda: scan_layers(8192, 1024, 3),
    }


def describe(name, build, device) -> dict:
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    fn, args = build()
    fn.__name__ = fn.__qualname__ = name
    sharding = NamedSharding(Mesh(np.array([device]), ("x",)), PartitionSpec())
    args = jax.tree_util.tree_map(
        lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sharding), args)
    compiled = jax.jit(fn, donate_argnums=DONATED.get(name, ())).lower(*args).compile()
    analysis = compiled.memory_analysis()
    fields = ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
              "temp_size_in_bytes")
    return {"module": f"jit_{name}", **{f: int(getattr(analysis, f)) for f in fields}}


def main(dump_dir: str, out_path: str, seed: int = SEED, names: tuple[str, ...] = ()) -> None:
    os.environ["XLA_FLAGS"] = f"--xla_dump_to={dump_dir} --xla_dump_hlo_as_text"
    from jax.experimental import topologies

    device = topologies.get_topology_desc("v5e:2x2", "tpu").devices[0]
    found = {name: describe(name, build, device) for name, build in programs(seed).items()
             if not names or name in names}
    with open(out_path, "w") as handle:
        json.dump(found, handle, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(int(a) for a in sys.argv[3:4]), names=tuple(sys.argv[4:]))
