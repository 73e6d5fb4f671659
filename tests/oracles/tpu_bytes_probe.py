"""Compiles small programs deviceless for one TPU v5e chip and writes, per program, libtpu's
optimized HLO and its `cost_analysis()` totals as JSON:

    python tpu_bytes_probe.py OUT.json

Run in a child process (it imports jax and loads libtpu). The programs cover what a train step
is made of: elementwise ops on shapes that fill their tiles and shapes that do not, reductions,
softmax, a transpose, matmuls, gathers and scatters of rows and of single elements (embedding
lookups, their gradients, take_along_axis), a dynamic-update-slice and a loop.
"""
from __future__ import annotations

import json
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import topologies
from jax.sharding import Mesh, NamedSharding, PartitionSpec

F32, BF16, S32 = jnp.float32, jnp.bfloat16, jnp.int32


def _take(x: jax.Array, t: jax.Array) -> jax.Array:
    return jnp.take_along_axis(x, t[..., None], -1)[..., 0]


PROGRAMS = {
    "elementwise_f32_3x5": (lambda x: x * 2 + 1, [((3, 5), F32)]),
    "elementwise_bf16_1023x1024": (lambda x: x * 2 + 1, [((1023, 1024), BF16)]),
    "reduce_f32": (lambda x: x.sum(0), [((1024, 1024), F32)]),
    "softmax_bf16": (lambda x: jax.nn.softmax(x, -1), [((512, 1024), BF16)]),
    "transpose_f32": (lambda x: x.T + 1, [((512, 1024), F32)]),
    "matmul_bf16": (lambda a, b: a @ b, [((256, 512), BF16), ((512, 1024), BF16)]),
    "gather_rows_f32": (lambda t, i: t[i], [((1000, 256), F32), ((2048,), S32)]),
    "gather_rows_bf16": (lambda t, i: t[i], [((512, 128), BF16), ((16, 512), S32)]),
    "take_along_f32": (_take, [((16, 512, 512), F32), ((16, 512), S32)]),
    "scatter_add_f32": (lambda t, i, u: t.at[i].add(u),
                        [((1000, 256), F32), ((512,), S32), ((512, 256), F32)]),
    "scatter_add_bf16": (lambda t, i, u: t.at[i].add(u),
                         [((512, 128), BF16), ((16, 512), S32), ((16, 512, 128), BF16)]),
    "dynamic_update_slice": (lambda t, u, i: jax.lax.dynamic_update_slice(t, u, (i, 0)),
                             [((1024, 256), F32), ((128, 256), F32), ((), S32)]),
    "loop_4": (lambda x: jax.lax.fori_loop(0, 4, lambda i, y: y * 2 + 1, x),
               [((1024, 256), F32)]),
}


def main() -> None:
    device = list(topologies.get_topology_desc("v5e:2x2", "tpu").devices)[:1]
    mesh = Mesh(np.array(device), ("x",))
    replicated = NamedSharding(mesh, PartitionSpec())
    found = {}
    for name, (function, shapes) in PROGRAMS.items():
        arguments = [jax.ShapeDtypeStruct(shape, dtype, sharding=replicated)
                     for shape, dtype in shapes]
        compiled = jax.jit(function).lower(*arguments).compile()
        cost = compiled.cost_analysis()
        cost = cost[0] if isinstance(cost, list) else cost
        found[name] = {"hlo": compiled.as_text(), "bytes_accessed": cost["bytes accessed"],
                       "flops": cost["flops"]}
    with open(sys.argv[1], "w") as out:
        json.dump(found, out)


if __name__ == "__main__":
    main()
