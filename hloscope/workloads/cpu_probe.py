"""What this machine's CPU does under XLA, measured: the rates the step model needs for `cpu`.

The CPU pseudo-device has no datasheet, so `sweep --measure` on the CPU predicts its steps with
rates measured here, in a child process that pins JAX to the CPU: the best of several runs of a
jitted matmul (bf16 and f32, 1024 x 1024 x 1024), of a streaming elementwise op over the
working set of the programs to be predicted (bytes read and written per second: a program that
fits the CPU's caches streams from them, several times faster than from DRAM, so the probe
streams over as many bytes as the programs need, between 1 MiB and 256 MiB), and of a chain of
sorts that XLA cannot fuse (the fixed cost of one op in a program). They describe this machine
at this moment (a loaded machine measures slower), which is what the measured steps run on.
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
x = jnp.ones((STREAM_BYTES // 8,), jnp.float32)
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


MIN_STREAM, MAX_STREAM = 1 << 20, 256 << 20


def probe_cpu(working_set_bytes: int = MAX_STREAM, timeout: float = 300.0) -> CpuRates:
    """The rates, streaming over `working_set_bytes` (read + written, clamped to 1..256 MiB)."""
    stream = max(MIN_STREAM, min(MAX_STREAM, working_set_bytes))
    environment = {**os.environ, "JAX_PLATFORMS": "cpu"}
    code = _PROBE.replace("STREAM_BYTES", str(stream))
    answer = subprocess.run([sys.executable, "-c", code], env=environment, timeout=timeout,
                            capture_output=True, text=True, check=True)
    rates = json.loads(answer.stdout.strip().splitlines()[-1])
    return CpuRates(rates["bf16_flops"], rates["f32_flops"], rates["bytes_per_second"],
                    rates["op_seconds"])
