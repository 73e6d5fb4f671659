"""Small scanned-layer training steps compiled on the CPU, with JAX's own account of each.

Run as a script in a child process (JAX stays out of the test process):
`python scanned_programs.py DUMP_DIR OUT.json` compiles every program with
`--xla_dump_to=DUMP_DIR --xla_dump_hlo_as_text` (module `jit_<name>`) and writes, per program:
XLA's `cost_analysis()` FLOPs of the compiled step, the pytree paths of its arguments
(`jax.tree_util.keystr`, prefixed with the argument's name as jit writes it), the layer count,
and what `jax._src.ad_checkpoint.saved_residuals` (what `print_saved_residuals` prints; a private
API, a test oracle only) says is saved: of the whole loss (a scan stacks them: `output of scan`)
and of one checkpointed block (`named 'mlp_hidden'`, ...).

The block: an MLP with a tanh hidden layer named `mlp_hidden` and a projection named `mlp_out`
(`checkpoint_name`), a residual add. LAYERS layers stacked on a leading axis of
`params['layers']` and scanned with `lax.scan`, under no remat, full remat, `save_only_these_names
('mlp_hidden')`; the same model unrolled (a Python loop over a list of per-layer parameters, no
while loop, so `cost_analysis()` counts every layer); a nested scan (LAYERS / GROUP groups of
GROUP layers); and a micro-batch accumulation loop of MICRO (= LAYERS, so a trip count cannot
tell the loops apart) steps around the scanned model. Fixed shapes; nothing is random.
"""
from __future__ import annotations

import json
import os
import sys

BATCH, D, HIDDEN, LAYERS, GROUP, MICRO = 8, 32, 64, 4, 2, 4
POLICIES = ("none", "full", "names")


def block(x, p):
    import jax.numpy as jnp
    from jax.ad_checkpoint import checkpoint_name

    hidden = checkpoint_name(jnp.tanh(x @ p["mlp"]["w1"]), "mlp_hidden")
    return x + checkpoint_name(hidden @ p["mlp"]["w2"], "mlp_out")


def remat(policy_name: str):
    import jax

    policy = {"full": jax.checkpoint_policies.nothing_saveable,
              "names": jax.checkpoint_policies.save_only_these_names("mlp_hidden")}
    return block if policy_name == "none" else jax.checkpoint(block, policy=policy[policy_name])


def params_spec():
    import jax
    import jax.numpy as jnp

    return {"layers": {"mlp": {"w1": jax.ShapeDtypeStruct((LAYERS, D, HIDDEN), jnp.float32),
                               "w2": jax.ShapeDtypeStruct((LAYERS, HIDDEN, D), jnp.float32)}},
            "head": jax.ShapeDtypeStruct((D, 1), jnp.float32)}


def scanned_loss(policy_name: str):
    import jax
    import jax.numpy as jnp

    layer = remat(policy_name)

    def loss(params, x):
        x = jax.lax.scan(lambda h, p: (layer(h, p), None), x, params["layers"])[0]
        return jnp.mean(x @ params["head"])
    return loss


def unrolled_loss(params, x):
    """The same model with a list of per-layer parameters: no loop, no slicing."""
    import jax.numpy as jnp

    for layer in params["layers"]:
        x = block(x, layer)
    return jnp.mean(x @ params["head"])


def nested_loss(params, x):
    import jax
    import jax.numpy as jnp

    grouped = jax.tree.map(lambda w: w.reshape(LAYERS // GROUP, GROUP, *w.shape[1:]),
                           params["layers"])

    def group(h, ps):
        return jax.lax.scan(lambda g, p: (block(g, p), None), h, ps)[0], None
    x = jax.lax.scan(jax.checkpoint(group), x, grouped)[0]
    return jnp.mean(x @ params["head"])


def sgd_step(loss):
    import jax

    def step(params, x):
        value, grads = jax.value_and_grad(loss)(params, x)
        return value, jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)
    return step


def microbatch_step(params, batch):
    """Gradients accumulated over MICRO micro-batches by a scan over `batch` ([MICRO, b, d])."""
    import jax
    import jax.numpy as jnp

    loss = scanned_loss("full")

    def accumulate(total, x):
        return jax.tree.map(jnp.add, total, jax.grad(loss)(params, x)), None
    zeros = jax.tree.map(jnp.zeros_like, params)
    grads = jax.lax.scan(accumulate, zeros, batch)[0]
    return jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)


def programs():
    import jax
    import jax.numpy as jnp

    x = jax.ShapeDtypeStruct((BATCH, D), jnp.float32)
    found = {f"scanned_{p}": (sgd_step(scanned_loss(p)), scanned_loss(p), x) for p in POLICIES}
    found["unrolled"] = (sgd_step(unrolled_loss), unrolled_loss, x)
    found["nested"] = (sgd_step(nested_loss), nested_loss, x)
    batch = jax.ShapeDtypeStruct((MICRO, BATCH, D), jnp.float32)
    found["microbatch"] = (microbatch_step, None, batch)
    return found


def residuals(function, *args) -> list[dict]:
    from jax._src.ad_checkpoint import saved_residuals

    return [{"dtype": str(aval.dtype), "shape": list(aval.shape),
             "bytes": int(aval.size) * aval.dtype.itemsize,
             "source": source.split(" from ", 1)[0]}
            for aval, source in saved_residuals(function, *args)]


def describe(name: str, step, loss, x) -> dict:
    import jax
    import jax.numpy as jnp

    params = params_spec()
    if name == "unrolled":
        params = {**params, "layers": [
            jax.tree.map(lambda w, i=i: jax.ShapeDtypeStruct(w.shape[1:], w.dtype),
                         params["layers"]) for i in range(LAYERS)]}
    step.__name__ = step.__qualname__ = name
    compiled = jax.jit(step).lower(params, x).compile()
    paths = ["params" + jax.tree_util.keystr(path)
             for path, _ in jax.tree_util.tree_flatten_with_path(params)[0]]
    one_layer = jax.tree.map(lambda w: jax.ShapeDtypeStruct(w.shape[1:], w.dtype),
                             params["layers"])
    block_x = jax.ShapeDtypeStruct((BATCH, D), jnp.float32)
    policy = name.removeprefix("scanned_") if name.startswith("scanned_") else None
    return {
        "module": f"jit_{name}", "layers": LAYERS,
        "xla_flops": compiled.cost_analysis()["flops"], "paths": paths,
        "residuals": residuals(loss, params, x) if loss is not None else [],
        "block_residuals": residuals(remat(policy), block_x, one_layer) if policy else [],
    }


def main(dump_dir: str, out_path: str) -> None:
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ["XLA_FLAGS"] = f"--xla_dump_to={dump_dir} --xla_dump_hlo_as_text"
    found = {name: describe(name, *built) for name, built in programs().items()}
    with open(out_path, "w") as handle:
        json.dump(found, handle, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
