"""What this machine's CPU does under XLA, measured: the rates the step model needs for `cpu`.

The CPU pseudo-device has no datasheet, so `sweep --measure` on the CPU predicts its steps with
rates measured here, in a child process that pins JAX to the CPU: the best of several runs of a
jitted matmul (bf16 and f32, 1024 x 1024 x 1024), of a streaming elementwise op over 256 MiB
(bytes read and written per second), and of a chain of sorts that XLA cannot fuse (the fixed
cost of one op in a program). They describe this machine at this moment (a loaded machine
measures slower), which is what the measured steps run on.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass

_PROBE = r"""
import json, time
import jax, jax.numpy as jnp

def best(f, *args, runs=5):
    f(*args).block_until_ready()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        f(*args).block_until_ready()
        times.append(time.perf_counter() - start)
    return min(times)

n = 1024
rates = {}
for name, dtype in (("bf16", jnp.bfloat16), ("f32", jnp.float32)):
    a = jnp.ones((n, n), dtype)
    rates[name + "_flops"] = 2 * n ** 3 / best(jax.jit(lambda x: x @ x), a)
x = jnp.ones((64 << 20,), jnp.float32)
rates["bytes_per_second"] = 2 * x.nbytes / best(jax.jit(lambda v: v * 2.0 + 1.0), x)
chain = 200
def sorts(v):
    for _ in range(chain):
        v = jnp.sort(v)[::-1]
    return v
small = jnp.arange(8, dtype=jnp.float32)
rates["op_seconds"] = best(jax.jit(sorts), small) / (2 * chain)
print(json.dumps(rates))
"""


@dataclass(frozen=True)
class CpuRates:
    bf16_flops: float
    f32_flops: float
    bytes_per_second: float
    op_seconds: float


def probe_cpu(timeout: float = 300.0) -> CpuRates:
    environment = {**os.environ, "JAX_PLATFORMS": "cpu"}
    answer = subprocess.run([sys.executable, "-c", _PROBE], env=environment, timeout=timeout,
                            capture_output=True, text=True, check=True)
    rates = json.loads(answer.stdout.strip().splitlines()[-1])
    return CpuRates(rates["bf16_flops"], rates["f32_flops"], rates["bytes_per_second"],
                    rates["op_seconds"])
