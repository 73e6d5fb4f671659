"""Blockwise attention, blockwise cross-entropy and gradient accumulation against the plain step.

The plain program is the independent truth: jax's own softmax attention over the full scores,
log-softmax over the full logits, one gradient over the whole batch. The memory-efficient
variants must give the same loss, gradients and updated state (float32, small configs), under
every remat variant, and their compiled CPU programs must not hold the tensors they exist to
avoid. In-process jax on CPU, except one small deviceless TPU compile in a subprocess.
"""
from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_workloads import needs_jax, train_step_files

from hloscope.configs.config import TransformerConfig
from hloscope.configs.policies import all_variant_names, parse_variant
from hloscope.configs.presets import preset_config
from hloscope.errors import EXIT_USAGE, UsageError
from hloscope.workloads.runner import CompileRequest, compile_in_subprocess

FP32 = {"param_dtype": "float32", "compute_dtype": "float32"}
LLAMA = dataclasses.replace(  # grouped-query (4 heads, 2 KV heads), rotary, untied, scanned
    preset_config("llama-1b"), d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=128,
    vocab=128, seq_len=64, batch=4, fsdp=False, **FP32)
GPT = dataclasses.replace(  # multi-head, learned positions, tied embeddings, unrolled
    preset_config("tiny"), d_model=64, n_heads=4, d_ff=128, vocab=128, seq_len=64, batch=4,
    **FP32)
BLOCKS = {"attention_q_block": 16, "attention_kv_block": 16, "loss_chunk": 16}
RTOL = 1e-5


def _random_like(tree: Any, seed: int) -> Any:
    import jax

    leaves, structure = jax.tree.flatten(tree)
    keys = jax.random.split(jax.random.PRNGKey(seed), len(leaves))
    return jax.tree.unflatten(structure, [
        0.2 * jax.random.normal(key, leaf.shape, leaf.dtype)
        for key, leaf in zip(keys, leaves, strict=True)])


def _zeros_like(tree: Any) -> Any:
    import jax

    return jax.tree.map(lambda leaf: jax.numpy.zeros(leaf.shape, leaf.dtype), tree)


def _batch(config: TransformerConfig) -> dict[str, Any]:
    import jax

    tokens = jax.random.randint(jax.random.PRNGKey(7), (config.batch, config.seq_len), 0,
                                config.vocab)
    return {"tokens": tokens, "targets": jax.numpy.roll(tokens, -1, axis=1)}


def _loss_and_grads(config: TransformerConfig, params: Any, batch: dict[str, Any]) -> Any:
    import jax

    from hloscope.workloads.transformer import loss_fn

    return jax.jit(jax.value_and_grad(lambda p: loss_fn(p, batch, config)))(params)


def _assert_close(expected: Any, actual: Any, rtol: float = RTOL) -> None:
    """Every leaf within rtol of the expected leaf's largest magnitude."""
    import jax
    import numpy as np

    pairs = zip(jax.tree.leaves(expected), jax.tree.leaves(actual), strict=True)
    for want, got in pairs:
        want, got = np.asarray(want), np.asarray(got)
        assert want.shape == got.shape
        scale = max(float(np.abs(want).max()), 1e-30)
        assert float(np.abs(want - got).max()) <= rtol * scale


def _compare(plain: TransformerConfig, **options: Any) -> None:
    from hloscope.workloads.transformer import abstract_params

    params = _random_like(abstract_params(plain, "float32"), seed=1)
    batch = _batch(plain)
    loss, grads = _loss_and_grads(plain, params, batch)
    other_loss, other_grads = _loss_and_grads(dataclasses.replace(plain, **options), params,
                                              batch)
    assert float(other_loss) == pytest.approx(float(loss), rel=RTOL)
    _assert_close(grads, other_grads)


def test_block_pairs_skip_the_future() -> None:
    from hloscope.workloads.blockwise import block_pairs

    for n in (1, 2, 4, 8):  # equal blocks: the lower triangle, n(n+1)/2 of n^2
        pairs = block_pairs(16 * n, 16, 16)
        assert len(pairs) == n * (n + 1) // 2 and all(j <= i for i, j in pairs)
    # a query block of 32 needs the two key blocks of 16 that start at or before its end
    assert block_pairs(64, 32, 16).tolist() == [[0, 0], [0, 1], [1, 0], [1, 1], [1, 2], [1, 3]]
    assert block_pairs(64, 16, 32).tolist() == [[0, 0], [1, 0], [2, 0], [2, 1], [3, 0], [3, 1]]


@needs_jax
@pytest.mark.parametrize("kv_heads", [4, 2, 1])  # multi-head, grouped-query, multi-query
@pytest.mark.parametrize("blocks", [(16, 16), (16, 32), (32, 16), (64, 64)])
def test_blockwise_attention_equals_plain_attention(kv_heads: int,
                                                    blocks: tuple[int, int]) -> None:
    """Output and q/k/v gradients of a weighted sum of the outputs (a dense cotangent)."""
    import jax

    from hloscope.workloads.blockwise import blockwise_attention
    from hloscope.workloads.layers import attend

    config = dataclasses.replace(LLAMA, n_kv_heads=kv_heads)
    b, s, heads, d = 2, config.seq_len, config.n_heads, config.head_dim
    q, k, v, weights = _random_like(
        [jax.ShapeDtypeStruct(shape, "float32") for shape in
         ((b, s, heads, d), (b, s, kv_heads, d), (b, s, kv_heads, d), (b, s, heads * d))],
        seed=3)

    def plain(q: Any, k: Any, v: Any) -> Any:
        return (attend(q, k, v, config) * weights).sum()

    def blockwise(q: Any, k: Any, v: Any) -> Any:
        return (blockwise_attention(q, k, v, *blocks).reshape(b, s, -1) * weights).sum()

    want = jax.jit(jax.value_and_grad(plain, argnums=(0, 1, 2)))(q, k, v)
    got = jax.jit(jax.value_and_grad(blockwise, argnums=(0, 1, 2)))(q, k, v)
    assert float(got[0]) == pytest.approx(float(want[0]), rel=RTOL)
    _assert_close(want[1], got[1])


@needs_jax
@pytest.mark.parametrize("tied", [True, False])
@pytest.mark.parametrize("chunk", [16, 64])
def test_blockwise_loss_equals_the_plain_loss(tied: bool, chunk: int) -> None:
    import jax

    from hloscope.workloads.blockwise import blockwise_cross_entropy

    b, s, h, v = 2, 64, 32, 128
    x, weight = _random_like([jax.ShapeDtypeStruct((b, s, h), "float32"),
                              jax.ShapeDtypeStruct((v, h) if tied else (h, v), "float32")],
                             seed=4)
    targets = jax.random.randint(jax.random.PRNGKey(5), (b, s), 0, v)

    def plain(x: Any, weight: Any) -> Any:  # the step's plain loss, written out
        logits = jax.numpy.einsum("bsh,vh->bsv", x, weight) if tied else x @ weight
        log_probs = jax.nn.log_softmax(logits, axis=-1)
        return -jax.numpy.take_along_axis(log_probs, targets[..., None], axis=-1).mean()

    def blockwise(x: Any, weight: Any) -> Any:
        return blockwise_cross_entropy(x, targets, weight, tied, chunk)

    want = jax.jit(jax.value_and_grad(plain, argnums=(0, 1)))(x, weight)
    got = jax.jit(jax.value_and_grad(blockwise, argnums=(0, 1)))(x, weight)
    assert float(got[0]) == pytest.approx(float(want[0]), rel=RTOL)
    _assert_close(want[1], got[1])


@needs_jax
@pytest.mark.parametrize("model", ["llama", "gpt"])
def test_memory_efficient_train_loss_equals_plain(model: str) -> None:
    """The whole model's loss and parameter gradients: grouped-query, rotary, untied and
    scanned (llama); multi-head, learned positions, tied and unrolled (gpt)."""
    _compare(LLAMA if model == "llama" else GPT, attention="blockwise", loss="blockwise",
             **BLOCKS)


FAST_VARIANTS = ("save_named", "nested:1")  # the names the policies select; a nested scan


@needs_jax
@pytest.mark.parametrize("name", [
    pytest.param(name, marks=() if name in FAST_VARIANTS else pytest.mark.slow)
    for name in all_variant_names(LLAMA)])
def test_memory_efficient_step_under_every_remat_variant(name: str) -> None:
    plain = parse_variant(name, LLAMA).apply(LLAMA)
    _compare(plain, attention="blockwise", loss="blockwise", **BLOCKS)


@needs_jax
@pytest.mark.parametrize("count", [pytest.param(2, marks=pytest.mark.slow), 4])
def test_micro_batches_update_the_state_as_one_batch(count: int) -> None:
    import jax

    from hloscope.workloads.transformer import abstract_state, train_step_fn

    config = dataclasses.replace(LLAMA, batch=8)
    shapes = abstract_state(config)
    state = shapes._replace(params=_random_like(shapes.params, seed=2),
                            mu=_zeros_like(shapes.mu), nu=_zeros_like(shapes.nu),
                            step=jax.numpy.zeros((), "int32"))
    batch = _batch(config)
    whole, metrics = jax.jit(train_step_fn(config))(state, batch)
    split_config = dataclasses.replace(config, micro_batches=count)
    split, split_metrics = jax.jit(train_step_fn(split_config))(state, batch)
    assert float(split_metrics["loss"]) == pytest.approx(float(metrics["loss"]), rel=RTOL)
    # mu = (1 - beta1) g and nu = (1 - beta2) g^2 after one step: the gradients themselves
    _assert_close(whole.mu, split.mu)
    _assert_close(whole.nu, split.nu)
    _assert_close(whole.params, split.params)


@needs_jax
def test_micro_batch_k_takes_every_kth_row() -> None:
    import jax.numpy as jnp

    from hloscope.workloads.transformer import micro_batches

    rows = jnp.arange(8)[:, None] * jnp.ones((1, 3), jnp.int32)
    split = micro_batches({"tokens": rows}, 4)["tokens"]
    assert split.shape == (4, 2, 3) and split[:, :, 0].tolist() == [[0, 4], [1, 5], [2, 6],
                                                                     [3, 7]]


def _compiled_shapes(config: TransformerConfig) -> set[tuple[int, ...]]:
    """Every array shape in the optimized CPU HLO of the train step (in-process compile)."""
    import jax

    from hloscope.workloads.transformer import abstract_batch, abstract_state, train_step_fn

    text = jax.jit(train_step_fn(config)).lower(abstract_state(config),
                                                abstract_batch(config)).compile().as_text()
    found = re.findall(r"\b(?:pred|s32|f32|bf16)\[([\d,]+)\]", text)
    return {tuple(int(d) for d in dims.split(",")) for dims in found}


@needs_jax
def test_compiled_blockwise_program_holds_neither_scores_nor_logits() -> None:
    # seq 512 in blocks of 128; vocab 1024 so the logits [2, 512, 1024] stand out
    base = dataclasses.replace(LLAMA, seq_len=512, batch=2, vocab=1024, attention_q_block=128,
                               attention_kv_block=128, loss_chunk=128, remat="full")
    b, s, v, heads = base.batch, base.seq_len, base.vocab, base.n_heads
    scores = b * heads * s * s

    def square(shape: tuple[int, ...]) -> bool:  # an [.., s, .., s, ..] tensor
        return shape.count(s) >= 2

    plain = _compiled_shapes(base)
    assert any(square(shape) and math.prod(shape) >= scores for shape in plain)
    assert any(sorted(shape) == sorted((b, s, v)) for shape in plain)
    blockwise = _compiled_shapes(dataclasses.replace(base, attention="blockwise",
                                                     loss="blockwise"))
    assert not any(square(shape) for shape in blockwise)
    block_scores = b * heads * 128 * 128  # one block's scores, every head
    assert max(math.prod(shape) for shape in blockwise) <= max(block_scores, v * b * 128)
    assert not any(s in shape and v in shape for shape in blockwise)


def test_at_scale_presets_default_to_the_memory_efficient_program() -> None:
    for model in ("llama-8b", "llama-70b"):
        config = preset_config(model)
        assert (config.attention, config.loss, config.micro_batches) == ("blockwise",
                                                                         "blockwise", 1)
        assert (config.q_block, config.kv_block, config.loss_chunk_size) == (512, 512, 1024)
    for model in ("tiny", "gpt2-small", "llama-1b"):  # the fixtures' program stays plain
        config = preset_config(model)
        assert (config.attention, config.loss, config.micro_batches) == ("plain", "plain", 1)


def test_block_sizes_default_to_divisors_of_the_sequence() -> None:
    assert TransformerConfig(seq_len=64).q_block == 64
    config = TransformerConfig(seq_len=768)
    assert (config.q_block, config.kv_block, config.loss_chunk_size) == (256, 256, 256)
    assert TransformerConfig(seq_len=4096).loss_chunk_size == 1024


@pytest.mark.parametrize(("options", "words"), [
    ({"attention_q_block": 48}, "attention_q_block 48 does not divide the sequence length 64"),
    ({"loss_chunk": 100}, "loss_chunk 100 does not divide"),
    ({"micro_batches": 3}, "divisors: 1, 2, 4, 8"),
    ({"attention": "flash"}, "known: plain, blockwise, splash"),
    ({"loss": "fused"}, "known: plain, blockwise"),
])
def test_bad_memory_options_are_usage_errors(options: dict[str, Any], words: str) -> None:
    with pytest.raises(UsageError, match=re.escape(words)):
        TransformerConfig(**options)


def test_placement_checks_name_the_valid_micro_batches() -> None:
    config = TransformerConfig(batch=24, micro_batches=4)
    config.check_placement("tpu", 3)  # 8 sequences per shard
    with pytest.raises(UsageError, match=r"the 6 sequences of each of the 4 .* 1, 2, 3, 6$"):
        config.check_placement("tpu", 4)
    with pytest.raises(UsageError, match="splash attention is a TPU kernel"):
        TransformerConfig(attention="splash").check_placement("cpu", 1)


@pytest.mark.parametrize(("arguments", "words"), [
    (["--micro-batches", "4", "--target", "cpu:4", "--batch", "8"], "valid --micro-batches: 1, 2"),
    (["--attention", "splash", "--target", "cpu"], "splash attention is a TPU kernel"),
    (["--attention-kv-block", "24", "--target", "cpu"], "does not divide the sequence length"),
])
def test_cli_refuses_bad_memory_options(tmp_path: Path, arguments: list[str],
                                        words: str) -> None:
    from hloscope.cli.main import cli

    result = CliRunner().invoke(cli, ["build", "--model", "tiny", "-o", str(tmp_path / "b"),
                                      "--no-cache", *arguments])
    assert result.exit_code == EXIT_USAGE and words in result.output
    assert not (tmp_path / "b").exists()


def test_cli_options_reach_the_config() -> None:
    from hloscope.cli.workload_options import model_options

    seen: dict[str, TransformerConfig] = {}

    @model_options
    def command(model: str, config: TransformerConfig) -> None:
        seen["config"] = config

    import click

    click.command()(command).main(
        ["--model", "tiny", "--attention", "blockwise", "--attention-q-block", "32",
         "--attention-kv-block", "16", "--loss", "blockwise", "--loss-chunk", "32",
         "--micro-batches", "2"], standalone_mode=False)
    config = seen["config"]
    assert (config.attention, config.q_block, config.kv_block) == ("blockwise", 32, 16)
    assert (config.loss, config.loss_chunk_size, config.micro_batches) == ("blockwise", 32, 2)


@pytest.mark.compile
def test_splash_blockwise_loss_and_micro_batches_compile_for_tpu(tmp_path: Path) -> None:
    """The TPU kernel compiles deviceless inside the FSDP, scanned, rematted step, with the
    blockwise loss and two micro-batches, as a `tpu_custom_call` (XLA counts it as 0 FLOPs)."""
    config = dataclasses.replace(
        preset_config("llama-8b"), d_model=256, n_layers=2, n_heads=2, n_kv_heads=1, d_ff=512,
        vocab=512, seq_len=256, batch=8, attention="splash", attention_q_block=128,
        attention_kv_block=128, loss_chunk=128, micro_batches=2, remat="full")
    result = compile_in_subprocess(CompileRequest("tpu:v5e:2x2", str(tmp_path / "dump"),
                                                  builder_kwargs=config.to_dict()), timeout=600)
    assert result.status == "ok", f"{result.error}\n{result.log_tail}"
    hlo = max((p for p in (tmp_path / "dump").iterdir()
               if p.name in train_step_files(result) and p.name.endswith(
                   ".after_optimizations.txt")), key=lambda p: p.stat().st_size)
    text = hlo.read_text()
    from hloscope.workloads.splash import KERNEL_TARGET

    assert f'custom_call_target="{KERNEL_TARGET}"' in text
    assert text.count(" while(") >= 3  # micro-batches, layers, loss chunks


@needs_jax
@pytest.mark.parametrize("remat", ["none", pytest.param("full", marks=pytest.mark.slow)])
def test_blockwise_attention_matmul_flops_follow_the_closed_form(remat: str) -> None:
    """hloscope's dot FLOPs (trip counts applied) of the compiled CPU step, plain minus
    blockwise, equal the closed form of the attention matmuls alone: per layer plain does
    4·b·s²·h forward and twice that backward; blockwise visits (n+1)/(2n) of the blocks
    forward and does 5/2 of its forward backward (the scores again, dV, dP, dQ, dK); full remat
    adds one more forward of each."""
    import jax

    from hloscope.api import flops
    from hloscope.workloads.transformer import abstract_batch, abstract_state, train_step_fn

    base = dataclasses.replace(LLAMA, d_model=128, seq_len=512, batch=2, attention_q_block=128,
                               attention_kv_block=128, remat=remat)

    def dot_flops(config: TransformerConfig) -> int:
        text = jax.jit(train_step_fn(config)).lower(
            abstract_state(config), abstract_batch(config)).compile().as_text()
        return next(row.flops for row in flops(text).rows("opcode") if row.key == "dot")

    b, s, h, n = base.batch, base.seq_len, base.d_model, base.seq_len // 128
    forward = 4 * b * s * s * h
    blockwise_forward = forward * (n + 1) // (2 * n)
    recomputed = 1 if remat == "full" else 0
    per_layer = (3 + recomputed) * forward - (7 / 2 + recomputed) * blockwise_forward
    difference = dot_flops(base) - dot_flops(dataclasses.replace(base, attention="blockwise"))
    assert difference == base.n_layers * per_layer


@pytest.mark.compile
def test_splash_kernel_flops_agree_with_blockwise_attention_matmuls(tmp_path: Path) -> None:
    """The splash build's Pallas kernels, which XLA counts as 0, are costed by their closed form
    (hloscope.analyses.cost.kernels), so its attention FLOPs can be set beside the blockwise
    build's. Both visit the same causal block pairs (equal 256-token blocks over 1024 tokens:
    10 of 16) with 2 matmuls each forward. Backward, blockwise does 5 matmuls per pair (the
    scores again, dV, dP, dQ, dK); splash does 7: its dq kernel 3 (QK^T, dO V^T, dS K) and its
    dkv kernel 4 (K Q^T, P^T dO, V dO^T, dS^T Q). So splash / blockwise = (2 + 7) / (2 + 5) =
    9/7. Blockwise's attention matmuls are its matmul FLOPs (dot and convolution: TPU rewrites
    dots) minus the splash build's, whose projections, MLP and head are the same; tolerance
    1%, for XLA choosing other matmul forms."""
    from hloscope.analyses.roofline import peak_flops
    from hloscope.api import build, flops
    from hloscope.configs.targets import parse_target

    target = "tpu:v5e:2x2"
    config = dataclasses.replace(
        preset_config("tiny"), n_layers=1, n_kv_heads=2, seq_len=1024, batch=8,
        attention="splash", attention_q_block=256, attention_kv_block=256, remat="none")

    def built(attention: str):
        summary = build(tmp_path / attention, target=target,
                        config=dataclasses.replace(config, attention=attention))
        assert summary.figures.status == "ok", summary.figures.error
        return summary

    def matmul_flops(summary) -> int:
        return sum(row.flops for row in flops(str(summary.build.folder)).rows("opcode")
                   if row.key in ("dot", "convolution"))

    splash, blockwise = built("splash"), built("blockwise")
    local_batch, heads, d = config.batch // 4, config.n_heads, config.d_model // config.n_heads
    pairs = 10
    hlo = splash.figures.hlo
    assert hlo.closed_form_flops == 9 * 2 * 256 * 256 * d * pairs * local_batch * heads
    blockwise_attention = matmul_flops(blockwise) - matmul_flops(splash)
    assert hlo.closed_form_flops / blockwise_attention == pytest.approx(9 / 7, rel=0.01)
    assert sorted(set(hlo.closed_form_kernels)) == [
        "splash_mqa_dkv_no_residuals", "splash_mqa_dq_no_residuals", "splash_mqa_fwd_residuals"]
    # the step estimate's compute term is over the FLOPs that include the kernels
    peak = peak_flops(parse_target(target).device, config.compute_dtype)
    assert splash.figures.step.compute_seconds == pytest.approx(hlo.total_flops / peak)
    # the build summary and a sweep's notes say so; the blockwise build has no such kernel
    from types import SimpleNamespace

    from hloscope.reports.sweep import build_report
    from hloscope.sweeps.core import closed_form_notes

    lines = dict(build_report(splash).summary)
    assert lines["  of which kernels' closed form"].value == hlo.closed_form_flops
    notes = closed_form_notes([SimpleNamespace(variant="splash", figures=splash.figures),
                               SimpleNamespace(variant="blockwise", figures=blockwise.figures)])
    assert len(notes) == 1 and notes[0].endswith("for: splash")
