"""Per-layer views of a user's own scanned model (flax.nnx and equinox), against JAX's account.

`user_step_programs.py` compiles examples/flax_step.py (through hloscope's `layers.scan` hook)
and examples/equinox_step.py (its own `lax.scan`) under none, full and dots_saveable on the CPU in
one child process (~6 s), with `saved_residuals` of each example's block under the same policy:
what one layer saves, by JAX's own partial evaluation.

Allowances between JAX's residuals and XLA's buffers, each measured on these programs:
- `from the argument layer...`: one layer's parameter slice. The scan reads it from the stacked
  [L, ...] parameter, an argument of the step, which memory shows as a `parameter` row split into
  the L layers, not as a saved activation.
- `output of broadcast_in_dim` (under none): relu's derivative holds a broadcast zero as a
  residual; XLA folds a broadcast constant into its user and never stores it.
- `from the argument x` is the carry: the scan stacks it per layer, a saved activation like the
  others.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from conftest import compile_dump_oracle

import hloscope

pytest.importorskip("flax")
pytest.importorskip("equinox")
pytestmark = pytest.mark.compile
LAYERS = 4
KEYS = [f"layer_{i}" for i in range(LAYERS)]
PROGRAMS = [f"{example}:{policy}" for example in ("flax_step", "equinox_step")
            for policy in ("none", "full", "dots_saveable")]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> tuple[Path, dict]:
    return compile_dump_oracle("user_step_programs.py", tmp_path_factory.mktemp("user_steps"))


def _load(compiled, name: str):
    dump, described = compiled
    return hloscope.load(dump, module=described[name]["module"]), described[name]


def _is_parameter(residual: dict) -> bool:
    return residual["source"].startswith("from the argument layer")


def _folded(residual: dict) -> bool:
    return residual["source"].startswith("output of broadcast_in_dim")


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_layer_loop_is_found(compiled, name):
    module, info = _load(compiled, name)
    assert info["layers"] == LAYERS
    assert [row.key for row in hloscope.flops(module).rows("layer")][:LAYERS] == KEYS
    recomputed = hloscope.remat(module)
    if recomputed.recompute_flops:
        assert [row.key for row in recomputed.rows("layer")] == KEYS
    assert hloscope.flops(module, xla_conventions=True).total.flops == pytest.approx(
        info["xla_flops"], rel=1e-6)


@pytest.mark.parametrize("name", PROGRAMS)
def test_saved_per_layer_matches_jax_saved_residuals(compiled, name):
    """The saved activations at the peak, split into layer rows, hold per layer what JAX says
    one block saves (shape and bytes), less the allowances of the module docstring."""
    module, info = _load(compiled, name)
    result = hloscope.memory(module)
    residuals = info["block_residuals"]
    saved = [row for row in result.live_at_peak
             if row.category == "saved activation" and row.layers]
    assert all(list(row.layers) == KEYS for row in saved)
    expected = Counter(r["bytes"] for r in residuals if not _is_parameter(r) and not _folded(r))
    assert Counter(row.bytes // LAYERS for row in saved) == expected
    shares = {(_dims(row.shape)[1:], row.bytes // LAYERS) for row in saved}
    for residual in residuals:
        if not _is_parameter(residual) and not _folded(residual):
            assert (tuple(residual["shape"]), residual["bytes"]) in shares, residual
    parameters = Counter(row.bytes // LAYERS for row in result.live_at_peak
                         if row.category == "parameter" and row.layers)
    assert Counter(r["bytes"] for r in residuals if _is_parameter(r)) <= parameters


def _dims(shape: str) -> tuple[int, ...]:
    return tuple(int(d) for d in shape.split("[", 1)[1].split("]", 1)[0].split(","))
