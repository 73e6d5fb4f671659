"""Compiles small looped JAX programs on the CPU, each once with its loop and once unrolled.

Run as a script in a child process (JAX stays out of the test process):
`python compiled_loops.py OUT.json` writes, per program, the looped program's optimized HLO text
and XLA's cost_analysis() of the unrolled one. Unrolling happens at trace time (`unroll=True`,
or a Python loop), so both variants compute the same thing.
"""
from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def programs():
    import jax
    import jax.numpy as jnp

    def layers(unroll):
        def run(x, ws):
            def step(h, w):
                return jnp.tanh(h @ w) + h, None
            return jax.lax.scan(step, x, ws, unroll=unroll)[0]
        return run, (jnp.ones((16, 64)), jnp.ones((6, 64, 64)))

    def fori(unroll):
        def run(x, w):
            if unroll:
                for _ in range(7):
                    x = jnp.exp(x @ w) * 0.5
                return x
            return jax.lax.fori_loop(0, 7, lambda i, h: jnp.exp(h @ w) * 0.5, x)
        return run, (jnp.ones((8, 32)), jnp.ones((32, 32)))

    def nested(unroll):
        def run(x, ws):
            def inner(h, w):
                return jnp.sin(h @ w), None

            def outer(h, block):
                return jax.lax.scan(inner, h, block, unroll=unroll)[0] * 2.0, None
            return jax.lax.scan(outer, x, ws, unroll=unroll)[0]
        return run, (jnp.ones((8, 32)), jnp.ones((3, 4, 32, 32)))

    def grad_of_scan(unroll):
        def loss(ws, x):
            def step(h, w):
                return jnp.tanh(h @ w), None
            return jnp.sum(jax.lax.scan(step, x, ws, unroll=unroll)[0] ** 2)
        return jax.grad(loss, argnums=(0, 1)), (jnp.ones((5, 32, 32)), jnp.ones((8, 32)))

    return {"layers": layers, "fori": fori, "nested": nested, "grad_of_scan": grad_of_scan}


def compile_all() -> dict:
    import jax

    found = {}
    for name, build in programs().items():
        looped, args = build(False)
        unrolled, _ = build(True)
        compiled = jax.jit(unrolled).lower(*args).compile()
        cost = compiled.cost_analysis()
        cost = cost[0] if isinstance(cost, list) else cost
        found[name] = {
            "looped_hlo": jax.jit(looped).lower(*args).compile().as_text(),
            "unrolled_flops": cost["flops"],
            "unrolled_transcendentals": cost.get("transcendentals", 0.0),
        }
    return found


if __name__ == "__main__":
    with open(sys.argv[1], "w") as handle:
        json.dump(compile_all(), handle)
