"""Analyse a function you just wrote: compile it with hloscope.from_jax and look at its memory.

    python examples/quickstart.py [OUT_DIR]

Runs on the CPU in a few seconds; writes OUT_DIR/quickstart.html (default: a new folder in the
system's temporary directory; the path is printed).
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

# This example compiles for the CPU in this process: JAX then starts its CPU backend alone, not
# the TPU or CUDA plugins an install may also hold (their start-up messages and tracebacks on a
# machine without the device are noise here). Set before jax is imported; yours wins if set.
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import hloscope  # noqa: E402


def train_step(params: dict, x: jax.Array, remat=lambda block: block) -> dict:
    """Gradients of a 4-layer MLP; `remat` is how hloscope.from_jax's `policy` gets in."""

    def block(w: jax.Array, h: jax.Array) -> jax.Array:
        return jax.nn.gelu(h @ w)

    def loss(params: dict) -> jax.Array:
        h = x
        for w in params["layers"]:
            h = remat(block)(w, h)
        return (h**2).mean()

    return jax.grad(loss)(params)


def main(out_dir: Path) -> None:
    weight = jax.ShapeDtypeStruct((512, 512), jnp.float32)  # abstract: nothing is allocated
    params = {"layers": [weight] * 4}
    batch = jax.ShapeDtypeStruct((256, 512), jnp.float32)
    for policy in ("none", "full"):
        module = hloscope.from_jax(train_step, params, batch, policy=policy)
        memory = hloscope.memory(module)
        flops = hloscope.flops(module)
        print(f"{policy:>5}: live peak {memory.peak_bytes:,} bytes, "
              f"{flops.total.flops:,} FLOPs, "
              f"{hloscope.remat(module).remat_instructions} recomputed instructions")
    frames = memory.to_pandas()
    print(frames["by_category"][["key", "bytes", "buffers"]].to_string(index=False))
    out_dir.mkdir(parents=True, exist_ok=True)
    hloscope.report(module, output=out_dir / "quickstart.html", force=True)
    print(f"wrote {out_dir / 'quickstart.html'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else
         Path(tempfile.mkdtemp(prefix="hloscope-quickstart-")))
