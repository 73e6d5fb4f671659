"""What each remat family saves for the backward pass, by JAX's own account.

The oracle is `jax._src.ad_checkpoint.saved_residuals` (what `jax.ad_checkpoint.
print_saved_residuals` prints; a private API, used as a test oracle only): for every residual,
its abstract value (with `<host>` memory kind when offloaded) and where it comes from, "from the
argument ...", "output of <primitive>" or "named '<name>'". One block of a small GPT-style and a
small Llama-style config is checkpointed as the workload does it and asked; the scanned model is
asked what its layer loop keeps.
"""
from __future__ import annotations

import dataclasses

import pytest
from test_workloads import needs_jax

from hloscope.configs.config import TransformerConfig
from hloscope.configs.policies import parse_variant
from hloscope.configs.presets import preset_config
from hloscope.configs.tensors import qkv_names

BATCH, SEQ = 2, 16
GPT = dataclasses.replace(preset_config("tiny"), seq_len=SEQ, batch=BATCH)
LLAMA = dataclasses.replace(preset_config("llama-1b"), d_model=64, n_heads=4, n_kv_heads=2,
                            d_ff=96, vocab=128, n_layers=3, seq_len=SEQ, batch=BATCH)
STYLES = {"gpt": GPT, "llama": LLAMA}


def block_residuals(name: str, base: TransformerConfig,
                    arguments: bool = False) -> list[tuple[str, tuple, str]]:
    """(source, shape, memory kind) of what one checkpointed block saves; the block's arguments
    (its input and parameters) only when `arguments`."""
    import jax
    import jax.numpy as jnp
    from jax._src.ad_checkpoint import saved_residuals

    from hloscope.workloads import layers, remat, transformer

    config = parse_variant(name, base).apply(dataclasses.replace(base, scan_layers=False))
    shapes = transformer.block_shapes(config)
    params = jax.tree.map(lambda s: jnp.full(s, 0.01, jnp.bfloat16), shapes,
                          is_leaf=lambda n: isinstance(n, tuple))
    x = jnp.ones((BATCH, SEQ, config.d_model), jnp.bfloat16)

    def block(x, p):
        return layers.block(x, p, config)

    fn = remat.checkpointed(block, config) if config.remat != "none" else block
    found = saved_residuals(lambda x, p: fn(x, p).astype(jnp.float32).sum(), x, params)
    saved = [(_source(text), tuple(aval.shape), _kind(aval)) for aval, text in found]
    if arguments:
        return saved
    return [residual for residual in saved if residual[0] != "argument"]


def _source(text: str) -> str:
    """"named 'qkv' from file:line (f)" -> "named 'qkv'"; "from the argument x" -> "argument"."""
    return "argument" if text.startswith("from the argument") else text.split(" from ")[0]


def _kind(aval) -> str:
    return str(getattr(aval, "memory_space", "")).rsplit(".", 1)[-1].lower()


def names(residuals: list[tuple[str, tuple, str]]) -> set[str]:
    return {source.split("'")[1] for source, _, _ in residuals if source.startswith("named")}


def unnamed_sources(residuals: list[tuple[str, tuple, str]]) -> set[str]:
    return {source for source, _, _ in residuals if not source.startswith("named")}


@needs_jax
@pytest.mark.parametrize("style", sorted(STYLES))
def test_no_remat_saves_the_activation_and_the_norms(style: str) -> None:
    # the oracle sees what the recompute levels drop: without remat all of it is saved
    saved = block_residuals("none", STYLES[style])
    assert {"norm1", "norm2", "mlp_hidden", "attn_out"} <= names(saved)


@needs_jax
@pytest.mark.parametrize("style", sorted(STYLES))
def test_recompute_1_saves_everything_but_the_mlp_activation(style: str) -> None:
    config = STYLES[style]
    saved = block_residuals("recompute:1", config)
    assert names(saved) == {"norm1", *qkv_names(config), "attn_out", "norm2"}
    assert unnamed_sources(saved) == {"output of dot_general"}  # projections only
    # the activation is recomputed from its saved pre-activation projection(s), no matmul again
    pre_activation = [s for s in saved if s[1] == (BATCH, SEQ, config.d_ff)]
    assert len(pre_activation) == (2 if config.activation == "swiglu" else 1)
    assert all(source == "output of dot_general" for source, _, _ in pre_activation)


@needs_jax
@pytest.mark.parametrize("style", sorted(STYLES))
def test_recompute_2_also_recomputes_the_norms(style: str) -> None:
    saved = block_residuals("recompute:2", STYLES[style])
    assert names(saved) == {*qkv_names(STYLES[style]), "attn_out"}
    assert unnamed_sources(saved) == {"output of dot_general"}
    level_1 = block_residuals("recompute:1", STYLES[style])
    dropped = [r for r in level_1 if r not in saved]
    assert sorted(source for source, _, _ in dropped) == ["named 'norm1'", "named 'norm2'"]


@needs_jax
@pytest.mark.parametrize("style", sorted(STYLES))
def test_offload_carries_saves_only_the_block_input_on_the_host(style: str) -> None:
    config = STYLES[style]
    saved = block_residuals("offload_carries", config, arguments=True)
    carry = (BATCH, SEQ, config.d_model)
    # the offload is a device_put to the host; the input itself is not kept beside it
    assert [r for r in saved if r[0] != "argument"] == [("output of device_put", carry, "host")]
    assert ("argument", carry, "device") not in saved
    assert ("argument", carry, "device") in block_residuals("full", config, arguments=True)


@needs_jax
def test_offload_scan_also_offloads_the_parameter_matrices() -> None:
    from hloscope.workloads import transformer

    saved = block_residuals("offload_scan", LLAMA)
    assert {(source, kind) for source, _, kind in saved} == {("output of device_put", "host")}
    matrices = [shape for shape in _leaves(transformer.block_shapes(LLAMA)) if len(shape) == 2]
    # vectors (norm scales) stay on the device: a libtpu limit, see workloads/remat.py
    assert sorted(shape for _, shape, _ in saved) == sorted(
        [(BATCH, SEQ, LLAMA.d_model), *matrices])


def _leaves(tree) -> list[tuple]:
    if isinstance(tree, dict):
        return [leaf for value in tree.values() for leaf in _leaves(value)]
    return [tree]


@needs_jax
@pytest.mark.parametrize("name", ["full", "offload_carries"])
def test_the_layer_scan_keeps_one_stacked_carry(name: str) -> None:
    """The scanned model's layer loop saves the L block inputs [L, b, s, h]: in device memory
    under full remat, in pinned host memory under offload_carries; nothing else per layer."""
    import jax
    import jax.numpy as jnp
    from jax._src.ad_checkpoint import saved_residuals

    from hloscope.workloads import transformer

    config = parse_variant(name, LLAMA).apply(LLAMA)
    params = jax.tree.map(lambda s: jnp.full(s.shape, 0.01, s.dtype),
                          transformer.abstract_params(config, jnp.bfloat16))
    tokens = jnp.zeros((BATCH, SEQ), jnp.int32)
    found = saved_residuals(lambda p: transformer.loss_fn(
        p, {"tokens": tokens, "targets": tokens}, config), params)
    stacked = [(tuple(aval.shape), _kind(aval)) for aval, text in found
               if "output of scan" in text]
    kind = "host" if name == "offload_carries" else "device"
    assert stacked == [((config.n_layers, BATCH, SEQ, config.d_model), kind)]
