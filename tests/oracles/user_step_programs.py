"""The flax.nnx and equinox examples' steps compiled on the CPU, with JAX's own account of what
one checkpointed block saves (a test oracle; run in a child process, JAX out of the test's).

`python user_step_programs.py DUMP_DIR OUT.json` compiles examples/flax_step.py and
examples/equinox_step.py under each policy of POLICIES with `--xla_dump_to=DUMP_DIR
--xla_dump_hlo_as_text` (module `jit_<example>_<policy>`) and writes, per program: XLA's
cost_analysis() FLOPs, the layer count, and `jax._src.ad_checkpoint.saved_residuals` (what
`print_saved_residuals` prints; private, an oracle only) of the example's own block, alone, under
`jax.checkpoint` with the policy from `jax.checkpoint_policies` (the block as the example runs it
per layer: the carry and one layer's parameter slices as arguments).
"""
from __future__ import annotations

import json
import os
import sys
import sysconfig
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
POLICIES = ("none", "full", "dots_saveable")


def _variant(policy: str):
    from hloscope.configs.step import StepConfig

    return StepConfig("oracle", "", takes_layers=True, remat=policy)


def _block_and_args(example: str):
    """The example's per-layer block and abstract (carry, one layer's parameters)."""
    import jax

    module = __import__(example)
    one = lambda leaf: jax.ShapeDtypeStruct(leaf.shape[1:], leaf.dtype)  # noqa: E731
    carry = jax.ShapeDtypeStruct((module.BATCH, module.SEQ, module.WIDTH), "float32")
    if example == "flax_step":
        from flax import nnx

        model = nnx.eval_shape(lambda: module.Model(nnx.Rngs(0)))
        graphdef, state = nnx.split(model.layers)
        return (lambda x, layer: nnx.merge(graphdef, layer)(x)), carry, jax.tree.map(one, state)
    import equinox as eqx

    model = eqx.filter_eval_shape(lambda: module.Model(jax.random.key(0)))
    # eval_shape's leaves are ShapeDtypeStructs, which eqx.is_array does not take for arrays
    stacked, static = eqx.partition(model.layers,
                                    lambda leaf: isinstance(leaf, jax.ShapeDtypeStruct))
    return (lambda x, layer: eqx.combine(layer, static)(x)), carry, jax.tree.map(one, stacked)


def residuals(example: str, policy: str) -> list[dict]:
    import jax
    from jax._src.ad_checkpoint import saved_residuals

    block, carry, layer = _block_and_args(example)
    if policy != "none":
        chosen = None if policy == "full" else getattr(jax.checkpoint_policies, policy)
        block = jax.checkpoint(block, policy=chosen)
    with _installed_packages_not_user_code():
        saved = saved_residuals(block, carry, layer)
    return [{"dtype": str(aval.dtype), "shape": list(aval.shape),
             "bytes": int(aval.size) * aval.dtype.itemsize, "source": source}
            for aval, source in saved]


@contextmanager
def _installed_packages_not_user_code() -> Iterator[None]:
    """A residual's `from FILE:LINE` is the innermost frame jax takes for user code: outside
    jax and the standard library. Where site-packages lies inside the standard library's folder
    (a bare interpreter) flax's frames are skipped and it is the example's line; in a virtual
    environment it would be flax's Linear. With installed packages excluded too, it is the
    example's line in every layout (the line hloscope reports for the name)."""
    from jax._src import source_info_util as frames

    added = [path for path in {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
             if path not in frames._exclude_paths]
    for path in added:
        frames.register_exclusion(path)
    try:
        yield
    finally:
        for path in added:
            frames._exclude_paths.remove(path)
        frames._exclude_path_regex.cache_clear()
        frames.is_user_filename.cache_clear()


def describe(example: str, policy: str) -> dict:
    import jax
    import numpy as np
    from jax.sharding import Mesh

    from hloscope.workloads.step import LayerScan, StepRemat

    module = __import__(example)
    mesh = Mesh(np.array(jax.devices("cpu")[:1]), ("data",))
    config = _variant(policy)
    with jax.set_mesh(mesh):
        remat = StepRemat(config, mesh)
        made = (module.make_step(remat, LayerScan(config)) if example == "flax_step"
                else module.make_step(remat))
        fn, args, _ = made
        fn.__name__ = fn.__qualname__ = f"{example.removesuffix('_step')}_{policy}"
        compiled = jax.jit(fn, donate_argnums=(0,)).lower(*args).compile()
    return {"module": f"jit_{fn.__name__}", "layers": module.LAYERS,
            "xla_flops": compiled.cost_analysis()["flops"],
            "block_residuals": residuals(example, policy)}


def main(dump_dir: str, out_path: str) -> None:
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ["XLA_FLAGS"] = f"--xla_dump_to={dump_dir} --xla_dump_hlo_as_text"
    sys.path[:0] = [str(REPO), str(EXAMPLES)]  # this checkout's hloscope (the hooks), the examples
    found = {f"{example}:{policy}": describe(example, policy)
             for example in ("flax_step", "equinox_step") for policy in POLICIES}
    Path(out_path).write_text(json.dumps(found, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
