"""The child process of one profiling run: `python -m hloscope.workloads.profile_job REQ RESULT`.

REQUEST (written by `profile.run_profile`) holds the model config, the number of steps and the
output folders. The child runs on the local device (JAX's default backend: CPU here, a GPU or
TPU where one is present): it builds real arrays for the train state and a batch **on the host
with NumPy** (so that no other program is compiled: the trace's metadata plane then holds the
train step alone), compiles the train step once with `xla_dump_to` (only this program is
dumped), runs it once to warm up, then runs `steps` steps under `jax.profiler.trace`, each in a
`StepTraceAnnotation`, waiting for each step's result. RESULT records the host-measured step
seconds, the losses, the program's dump file and the package versions. jax is imported inside
the functions, after `missing.guarded` has checked that it is installed.
"""
from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

from hloscope.configs.config import TransformerConfig
from hloscope.workloads.missing import guarded

STEP_NAME = "train"


def host_params(config: TransformerConfig, seed: int = 0) -> Any:
    """Parameters as NumPy arrays (normal(0.02) weights, zero biases, unit norm scales)."""
    import jax
    import numpy as np

    from hloscope.workloads.transformer import _is_shape, param_shapes

    rng = np.random.default_rng(seed)
    dtype = _numpy_dtype(config.param_dtype)

    def leaf(path: Any, shape: tuple[int, ...]) -> np.ndarray:
        name = str(getattr(path[-1], "key", path[-1]))
        if name == "scale":
            return np.ones(shape, dtype)
        if name in ("b", "bias"):
            return np.zeros(shape, dtype)
        return (0.02 * rng.standard_normal(shape, np.float32)).astype(dtype)

    return jax.tree_util.tree_map_with_path(leaf, param_shapes(config), is_leaf=_is_shape)


def host_state(config: TransformerConfig, seed: int = 0) -> tuple[Any, dict[str, Any]]:
    """The train state (a transformer.TrainState) and a batch, as NumPy arrays."""
    import jax
    import numpy as np

    from hloscope.workloads.transformer import TrainState

    params = host_params(config, seed)
    master = jax.tree.map(lambda p: p.astype(np.float32), params)
    zeros = jax.tree.map(np.zeros_like, master)
    state = TrainState(params, None if config.param_dtype == "float32" else master, zeros,
                       jax.tree.map(np.zeros_like, master), np.zeros((), np.int32))
    tokens = np.random.default_rng(seed + 1).integers(
        0, config.vocab, (config.batch, config.seq_len), dtype=np.int32)
    return state, {"tokens": tokens, "targets": np.roll(tokens, -1, axis=1)}


def run(request: dict[str, Any]) -> dict[str, Any]:
    import jax

    from hloscope.workloads.transformer import train_step_fn

    config = TransformerConfig.from_dict(request["config"])
    host = host_state(config)
    step = jax.jit(train_step_fn(config), donate_argnums=(0,))
    options = {"xla_dump_to": request["dump_dir"], "xla_dump_hlo_as_text": True}
    compiled = step.lower(*host).compile(compiler_options=options)
    compile_peak = _allocator_peak()
    state, batch = jax.device_put(host)
    state, metrics = compiled(state, batch)
    jax.block_until_ready(state)
    seconds, losses = [], []
    with jax.profiler.trace(request["trace_dir"]):
        for number in range(request["steps"]):
            started = time.perf_counter()
            with jax.profiler.StepTraceAnnotation(STEP_NAME, step_num=number):
                state, metrics = compiled(state, batch)
                jax.block_until_ready(state)
            seconds.append(time.perf_counter() - started)
            losses.append(float(metrics["loss"]))
    return {"step_seconds": seconds, "losses": losses, "backend": jax.default_backend(),
            "device_kind": jax.devices()[0].device_kind,
            "device_memory": device_memory(compiled, compile_peak)}


def device_memory(compiled: Any, compile_peak: int | None) -> dict[str, Any]:
    """`memory_analysis` (compiler.MemoryFigures' keys), `allocator` (memory_stats()'s integer
    counters after the steps) and `compile_peak_bytes` (the allocator's peak after compiling and
    before the state was put on the device: the autotuner's scratch, which the run's peak would
    hide only if larger), each None where the backend gives none."""
    import jax

    from hloscope.workloads.compiler import memory_figures

    figures = memory_figures(compiled.memory_analysis())
    stats = jax.devices()[0].memory_stats()
    allocator = None if not stats else {key: int(value) for key, value in stats.items()
                                        if isinstance(value, int)}
    return {"memory_analysis": None if figures is None else dataclasses.asdict(figures),
            "allocator": allocator, "compile_peak_bytes": compile_peak}


def _allocator_peak() -> int | None:
    import jax

    stats = jax.devices()[0].memory_stats()
    return int(stats["peak_bytes_in_use"]) if stats and "peak_bytes_in_use" in stats else None


def _numpy_dtype(name: str) -> Any:
    import ml_dtypes
    import numpy as np

    return ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m hloscope.workloads.profile_job REQUEST.json RESULT.json",
              file=sys.stderr)
        return 2
    request = json.loads(Path(args[0]).read_text())
    result_path = Path(args[1])

    def profile_and_write() -> int:
        result_path.write_text(json.dumps(run(request), indent=2))
        return 0

    platform = request.get("platform", "cpu")
    return guarded(profile_and_write, result_path, platform, f"profiling on {platform}")


if __name__ == "__main__":
    sys.exit(main())
