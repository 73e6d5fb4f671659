"""Writes the XLA:CPU seed modules of benchmarks/fuzz_mutations.py (needs jax; runs on CPU).

Each is `jax.jit(f).lower(...).compile().as_text()`: a scheduled module (is_scheduled=true) with
its stack-frame tables, as XLA:CPU prints it after optimizations. The four programs cover a while
loop holding a conditional, a small conv net's SGD step, a bf16 MLP's step and a scanned (while
loop) transformer under remat with its gradient. `async_collectives.hlo` beside them is written by
hand (CPU makes no async pairs): async-start/-update/-done, copy-start/-done, all-reduce-,
all-gather- and collective-permute-start/-done, a kLoop fusion, a while loop and a conditional.

    JAX_PLATFORMS=cpu python benchmarks/fuzz_seeds/generate.py
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

HERE = Path(__file__).resolve().parent


def loop_with_conditional(x: jax.Array, n: jax.Array) -> jax.Array:
    def body(i: jax.Array, carry: jax.Array) -> jax.Array:
        picked = lax.cond(carry.sum() > 0, lambda v: v * 2.0, lambda v: jnp.tanh(v) + 1.0, carry)
        return picked + i

    return lax.fori_loop(0, n, body, x)


def conv_net_step(params: tuple[jax.Array, jax.Array], x: jax.Array) -> tuple[jax.Array, ...]:
    numbers = ("NHWC", "HWIO", "NHWC")

    def loss(w1: jax.Array, w2: jax.Array) -> jax.Array:
        y = jax.nn.relu(lax.conv_general_dilated(x, w1, (1, 1), "SAME",
                                                 dimension_numbers=numbers))
        y = lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        y = lax.conv_general_dilated(y, w2, (1, 1), "SAME", dimension_numbers=numbers)
        return (y**2).mean()

    grads = jax.grad(loss, argnums=(0, 1))(*params)
    return tuple(w - 0.1 * g for w, g in zip(params, grads, strict=True))


def mlp_bf16_step(weights: list[jax.Array], x: jax.Array) -> tuple[jax.Array, list[jax.Array]]:
    def loss(weights: list[jax.Array]) -> jax.Array:
        h = x
        for w in weights:
            h = jax.nn.gelu(h @ w)
        return (h.astype(jnp.float32) ** 2).mean()

    value, grads = jax.value_and_grad(loss)(weights)
    return value, [w - jnp.bfloat16(0.01) * g for w, g in zip(weights, grads, strict=True)]


def scanned_transformer_step(params: tuple[jax.Array, ...],
                             x: jax.Array) -> tuple[jax.Array, Any]:
    def layer(h: jax.Array, p: tuple[jax.Array, ...]) -> tuple[jax.Array, None]:
        wq, wk, wv, wo, w1, w2 = p
        attention = jax.nn.softmax((h @ wq) @ (h @ wk).T / 4.0, axis=-1) @ (h @ wv)
        h = h + attention @ wo
        return h + jax.nn.relu(h @ w1) @ w2, None

    def loss(params: tuple[jax.Array, ...]) -> jax.Array:
        h, _ = lax.scan(jax.checkpoint(layer), x, params)
        return (h**2).mean()

    value, grads = jax.value_and_grad(loss)(params)
    return value, jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)


def _write(name: str, function: Callable[..., Any], *args: Any) -> None:
    text = jax.jit(function).lower(*args).compile().as_text()
    (HERE / f"{name}.hlo").write_text(text)
    print(f"{name}.hlo: {len(text)} bytes")


def main() -> None:
    f32, bf16 = jnp.float32, jnp.bfloat16
    _write("cpu_while_conditional", loop_with_conditional, jnp.ones((4, 8), f32), 3)
    _write("cpu_conv_net", conv_net_step,
           (jnp.ones((3, 3, 2, 4), f32), jnp.ones((3, 3, 4, 2), f32)), jnp.ones((2, 8, 8, 2), f32))
    _write("cpu_mlp_bf16", mlp_bf16_step, [jnp.ones((16, 32), bf16), jnp.ones((32, 16), bf16)],
           jnp.ones((4, 16), bf16))
    layers, width = 2, 8
    shapes = [(width, width)] * 4 + [(width, 16), (16, width)]
    _write("cpu_scan_transformer", scanned_transformer_step,
           tuple(jnp.ones((layers, *s), f32) for s in shapes), jnp.ones((6, width), f32))


if __name__ == "__main__":
    main()
