"""Scanned layers unrolled in the report, against XLA's and JAX's own accounts.

`scanned_programs.py` compiles small MLP-block training steps on the CPU in one child process
(~3 s): four layers stacked on `params['layers']` and scanned under three remat policies, the
same model unrolled, a nested scan (2 groups of 2 layers) and a micro-batch loop of 4 steps
(as many as there are layers) around the scanned model.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from conftest import compile_dump_oracle

import hloscope
from hloscope.analyses.cost.layer_loops import LayerLoops

pytestmark = pytest.mark.compile
LAYERS = 4
KEYS = [f"layer_{i}" for i in range(LAYERS)]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> tuple[Path, dict]:
    return compile_dump_oracle("scanned_programs.py", tmp_path_factory.mktemp("scanned"))


def _load(compiled, name: str):
    dump, described = compiled
    return hloscope.load(dump, module=described[name]["module"]), described[name]


def _while_loops(module) -> list[tuple[str, str]]:
    return [(c.name, i.name) for c, i in module.instructions() if i.opcode == "while"]


@pytest.mark.parametrize("name", ["scanned_none", "scanned_full", "scanned_names"])
def test_the_forward_and_backward_scans_are_the_layer_loops(compiled, name):
    module, _ = _load(compiled, name)
    loops = LayerLoops(module).loops
    assert set(loops) == set(_while_loops(module))  # the scan's forward and backward loop
    assert len(loops) == 2
    assert {loop.layers for loop in loops.values()} == {LAYERS}
    assert all("params['layers']['mlp']" in loop.because for loop in loops.values())


def test_a_micro_batch_loop_of_as_many_steps_is_not_a_layer_loop(compiled):
    """The micro-batch loop runs 4 times, like the layer loops inside it, but slices the batch:
    it is no layer loop, and the layers are still four rows."""
    module, _ = _load(compiled, "microbatch")
    loops = LayerLoops(module).loops
    outer = [key for key in _while_loops(module) if key[0] == module.entry_name]
    assert len(outer) == 1 and outer[0] not in loops
    assert len(loops) == 2
    keys = [row.key for row in hloscope.flops(module).rows("layer")]
    assert keys[:LAYERS] == KEYS and f"{outer[0][1]} (loop body)" in keys


def test_a_nested_scans_loops_are_all_layer_loops(compiled):
    """Two groups of two layers: the outer loops (2 groups) and the inner ones (2 layers each);
    a layer is one iteration of both, so the rows are layer_0..layer_3 again."""
    module, _ = _load(compiled, "nested")
    loops = LayerLoops(module).loops
    assert set(loops) == set(_while_loops(module))
    assert {loop.layers for loop in loops.values()} == {2}
    rows = hloscope.flops(module).rows("layer")
    assert [r.key for r in rows] == [*KEYS, "(outside layers)"]
    per_layer = [r.flops for r in rows[:LAYERS]]
    assert max(per_layer) - min(per_layer) <= 0.001 * max(per_layer)


@pytest.mark.parametrize("name", ["scanned_none", "scanned_full", "scanned_names"])
def test_layer_rows_add_up_to_what_xla_counts(compiled, name):
    """With XLA's conventions (loop bodies once) the total is XLA's cost_analysis() of the same
    program; with trip counts, L equal layer rows and the rest add up to the total exactly."""
    module, info = _load(compiled, name)
    assert hloscope.flops(module, xla_conventions=True).total.flops == info["xla_flops"]
    result = hloscope.flops(module)
    rows = {r.key: r for r in result.rows("layer")}
    assert list(rows) == [*KEYS, "(outside layers)"]
    assert sum(r.flops for r in rows.values()) == result.total.flops
    assert sum(r.bytes_accessed for r in rows.values()) == result.total.bytes_accessed
    assert max(rows[k].flops for k in KEYS) - min(rows[k].flops for k in KEYS) <= LAYERS


def test_scanned_layers_cost_what_the_unrolled_model_costs(compiled):
    """L x one layer + the rest against XLA's cost_analysis() of the same model unrolled (no
    loop, so XLA counts every layer). The gradient is taken of the parameters only, so the
    unrolled program drops the first layer's input gradient (hidden-gradient @ w1^T, 2*B*H*D
    FLOPs) as dead code, while the scan body computes it on every iteration, the last included:
    the scanned program does that one matmul more, and nothing else beyond a few elementwise
    FLOPs (measured: 32,748 more = 32,768 - 20)."""
    from scanned_programs import BATCH, HIDDEN, D

    module, _ = _load(compiled, "scanned_none")
    _, unrolled = _load(compiled, "unrolled")
    rows = {r.key: r for r in hloscope.flops(module).rows("layer")}
    total = LAYERS * rows["layer_0"].flops + rows["(outside layers)"].flops
    dead_input_gradient = 2 * BATCH * HIDDEN * D
    assert total - unrolled["xla_flops"] == pytest.approx(dead_input_gradient, abs=64)


def test_recompute_is_split_evenly_over_the_layers(compiled):
    module, _ = _load(compiled, "scanned_full")
    result = hloscope.remat(module)
    rows = result.rows("layer")
    assert [r.key for r in rows] == KEYS
    assert sum(r.flops for r in rows) == result.recompute_flops > 0
    assert max(r.flops for r in rows) - min(r.flops for r in rows) <= LAYERS


def test_memory_splits_stacked_buffers_into_layers(compiled):
    """Under save_only_these_names('mlp_hidden') JAX saves, per layer, the block input and the
    named `mlp_hidden` (the block alone: `named 'mlp_hidden'` f32[8,64]); the scan stacks them
    ([4, 8, 32], [4, 8, 64], `output of scan`). At the peak each is a saved activation split
    into layer_0..layer_3 whose per-layer share has the block residual's shape and bytes."""
    module, info = _load(compiled, "scanned_names")
    result = hloscope.memory(module)
    stacked = [r for r in info["residuals"] if r["source"] == "output of scan"
               and r["shape"][:1] == [LAYERS]]
    saved = [row for row in result.live_at_peak if row.category == "saved activation"
             and row.layers]
    assert Counter(row.bytes for row in saved) == Counter(r["bytes"] for r in stacked)
    assert all(list(row.layers) == KEYS for row in saved)
    named = next(r for r in info["block_residuals"] if r["source"] == "named 'mlp_hidden'")
    assert named["bytes"] * LAYERS in {row.bytes for row in saved}
    by_layer = {g.key: g.bytes for g in result.groups("layer")}
    share = sum(row.bytes for row in result.live_at_peak if row.layers) // LAYERS
    assert [by_layer[k] for k in KEYS] == [share] * LAYERS


def test_arguments_are_named_by_their_pytree_paths(compiled):
    """inspect and memory name the entry parameters by the paths jax.tree_util.keystr gives."""
    module, info = _load(compiled, "scanned_names")
    inspected = hloscope.inspect(module)
    assert {p.path for p in inspected.parameters} >= set(info["paths"])
    rows = {row.argument for row in hloscope.memory(module).live_at_peak if row.argument}
    assert rows and rows <= set(info["paths"]) | {"x"}
