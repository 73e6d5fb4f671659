"""Saved activations hold across layers, against JAX's own account of its residuals.

`layer_programs.py` compiles two-layer training steps on the CPU in one child process (~20 s):
unrolled (`layer_0`, `layer_1`) and scanned, each with no remat, full remat, `checkpoint_dots`,
`dots_with_no_batch_dims_saveable` and host offload of a named value, and writes what
`saved_residuals` says the backward pass saves (dtype, shape, bytes, source line). A residual is
matched to hloscope's buffers by its source line and bytes (XLA's CPU buffers are often
bitcast to another shape of the same bytes: f32[32,32] for JAX's f32[2,16,32]) and, for a
scanned model's stacked residuals, by shape and bytes. XLA does not keep exactly JAX's residuals:
it recomputes cheap elementwise residuals from one it keeps (of `tanh`, `1 - tanh` and the named
`mlp_hidden` it keeps one), keeps the last layer's output where JAX saves the loss's `2 * x`, and
on the CPU merges a checkpointed block's recomputation with its forward pass (so it keeps more
than JAX's block input); so the tests ask that what JAX saves per layer is categorised alike in
both layers, and that what JAX says crosses layers (a checkpointed block input, a scan's stacked
residuals, the causal mask) is a saved activation. Host placement is not checked here: the CPU
backend ignores the offload (a TPU fixture checks it, tests/analyses/memory/test_host_offload.py).
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from conftest import FIXTURES, compile_dump_oracle

import hloscope
from hloscope.analyses.memory.analysis import source_location
from hloscope.analyses.memory.liveness import analyze_liveness
from hloscope.analyses.memory.liveness.categories import Category, Classifier

pytestmark = pytest.mark.compile
POLICIES = ("none", "full", "dots", "dots_no_batch", "offload")
SAVED = Category.SAVED_ACTIVATION


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> tuple[Path, dict]:
    return compile_dump_oracle("layer_programs.py", tmp_path_factory.mktemp("layer-programs"))


def _saved_buffers(module) -> list[tuple[str | None, int, tuple[int, ...], str, int]]:
    """(layer, source line, dims, dtype, bytes) of one value per saved-activation buffer."""
    liveness = analyze_liveness(module)
    classifier = Classifier(liveness)
    first = {}
    for value in liveness.live_values():
        if value.shape.rank and classifier.category(value) is SAVED:
            first.setdefault(liveness.buffers.find(value.id), value)
    return [(classifier.layer(v), source_location(module, classifier.namer(v.instruction))[1],
             tuple(v.shape.dimensions), v.shape.element_type, v.bytes) for v in first.values()]


def _residuals(info: dict) -> list[dict]:
    return [r for r in info["residuals"] if not r["source"].startswith("from the argument")]


@pytest.mark.parametrize("policy", ["none", "dots", "dots_no_batch", "offload"])
def test_each_layer_saves_what_jax_saves_per_layer_alike(compiled, policy):
    """Every residual JAX saves once per layer (same source line and bytes, twice) that XLA
    keeps is a saved activation of both layers, as many times in each. (Under full remat JAX
    saves nothing twice: layer_0's input is the argument; see the next test.)"""
    dump, described = compiled
    info = described[f"unrolled_{policy}"]
    saved = _saved_buffers(hloscope.load(dump, module=info["module"]))
    per_layer = Counter((r["line"], r["bytes"]) for r in _residuals(info))
    kept = 0
    for key, count in per_layer.items():
        if count < 2:
            continue
        layers = Counter(layer for layer, line, _, _, size in saved if (line, size) == key)
        assert layers["layer_0"] == layers["layer_1"], (key, layers)
        kept += layers["layer_0"]
    assert kept > 0


@pytest.mark.parametrize("policy", ["full", "dots", "dots_no_batch", "offload"])
def test_the_checkpointed_block_input_is_saved(compiled, policy):
    """Under remat JAX saves layer_1's input, the output of layer_0's last add; it is a saved
    activation of layer_0 (layer_0's own input is the program's argument)."""
    dump, described = compiled
    info = described[f"unrolled_{policy}"]
    inputs = [r for r in _residuals(info) if r["source"] == "output of add"
              and r["line"] == max(r["line"] for r in _residuals(info) if r["line"] < 80)]
    assert len(inputs) == 1
    saved = _saved_buffers(hloscope.load(dump, module=info["module"]))
    assert ("layer_0", inputs[0]["line"], inputs[0]["bytes"]) in {
        (layer, line, size) for layer, line, _, _, size in saved}


@pytest.mark.parametrize("policy", POLICIES)
def test_a_scans_stacked_residuals_are_saved(compiled, policy):
    """Every residual the scanned model stacks ([layers, ...], `output of scan`) is a
    saved-activation buffer of that shape and bytes, and no buffer of such a shape is anything
    else (a stacked residual rides in the forward loop's carry and reaches the backward loop)."""
    dump, described = compiled
    info = described[f"scanned_{policy}"]
    stacked = [r for r in _residuals(info) if r["source"] == "output of scan"]
    assert stacked
    module = hloscope.load(dump, module=info["module"])
    saved = Counter((dims, size) for _, _, dims, _, size in _saved_buffers(module))
    assert not Counter((tuple(r["shape"]), r["bytes"]) for r in stacked) - saved
    shapes = {tuple(r["shape"]) for r in stacked}
    liveness = analyze_liveness(module)
    classifier = Classifier(liveness)
    for value in liveness.live_values():
        if tuple(value.shape.dimensions) in shapes and not value.shape.is_tuple:
            assert classifier.category(value) is SAVED, value.name


def test_the_causal_mask_jax_saves_is_saved(compiled):
    """JAX saves the boolean mask of `jnp.where`; XLA builds it outside differentiation (from
    constants) and the backward pass reads it."""
    dump, described = compiled
    info = described["scanned_none"]
    masks = [r for r in _residuals(info) if r["dtype"] == "bool"]
    assert masks
    saved = _saved_buffers(hloscope.load(dump, module=info["module"]))
    for mask in masks:
        assert (tuple(mask["shape"]), "pred", mask["bytes"]) in {
            (dims, dtype, size) for _, _, dims, dtype, size in saved}


def test_tpu_checkpointed_input_through_async_copies_is_saved():
    """On TPU (v5e, full remat) XLA moves layer_0's checkpointed input from VMEM to HBM with
    copy-start/copy-done and reads it back in the backward pass with async slices named after the
    forward op that made it: the HBM copy is a saved activation."""
    module = hloscope.load(FIXTURES / "tpu-v5e-2x2" / "remat-full")
    liveness = analyze_liveness(module)
    classifier = Classifier(liveness)
    copies = [v for v in liveness.live_values() if v.instruction.opcode == "copy-start"
              and classifier.layer(v) == "layer_0" and v.index == (0,) and v.memory_space == 0
              and v.shape.rank == 3]
    assert copies and all(classifier.category(v) is SAVED for v in copies)
