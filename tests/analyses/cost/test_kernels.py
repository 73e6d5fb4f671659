"""Splash attention's Pallas kernels (`tpu_custom_call`) are costed by the flash-attention closed
form on their shapes; other Pallas kernels stay unattributed.

The hand-built module below is shaped as jax 0.10.2 lowers `jax.vmap(jax.vmap(make_splash_mqa))`
for TPU (operands, outputs, op_name and the `kernel_metadata` frontend attribute copied from a
real `--attention splash` dump, sizes changed). The expected figures are counted independently:
the visited (q block, kv block) pairs from an element-level causal mask (numpy), and each
kernel's matmuls read off jax's splash_attention_kernel.py by hand."""
from __future__ import annotations

import json

import numpy as np
import pytest

import hloscope
from hloscope.analyses.cost import CostAnalysis, CostOptions
from hloscope.analyses.cost.flops import FlopsResult, flops
from hloscope.reports.flops import flops_report

BATCH = (2, 3)  # vmapped: batch x key/value heads
G, S, D, DV = 2, 1024, 64, 128  # query heads per kernel, sequence, head dims of q/k and v
BYTES = {"bf16": 2, "f32": 4, "s8": 1, "s32": 4}


def metadata(**blocks: int) -> str:
    """frontend_attributes as XLA prints a Pallas kernel's (a JSON string inside JSON)."""
    inner = json.dumps({**blocks, "q_layout": 1, "k_layout": 1, "v_layout": 1})
    return "frontend_attributes={kernel_metadata={\n" + json.dumps(
        {"xprof_metadata": inner})[1:-1] + "\n}}"


def op_name(kernel: str) -> str:
    """As jax names a kernel launch; the backward kernels run under transpose(jvp(...))."""
    scope = "jvp(layer_0)" if "fwd" in kernel else "transpose(jvp(layer_0))"
    return (f'metadata={{op_name="jit(train_step)/{scope}/shard_map/vmap(vmap('
            f'static_sparsity_splash))/jit(_splash_attention)/{kernel}/{kernel}/pallas_call"}}')


B = ",".join(map(str, BATCH))
Q, KV, VV = f"bf16[{B},{G},{S},{D}]", f"bf16[{B},{S},{D}]", f"bf16[{B},{S},{DV}]"
LSE, MASK = f"f32[{B},{G},1,{S}]", "s8[1,4,4]"
FWD_OUT = (f"(f32[{B},256,128], f32[{B},256,128], f32[{B},256,{DV}], bf16[{B},{G},{S},{DV}], "
           f"f32[{B},{G},{S},128])")
DQ_OUT = f"(f32[{B},512,{D}], {Q})"
DKV_OUT = (f"(f32[{B},128,{D}], f32[{B},256,{D}], f32[{B},256,{DV}], bf16[{B},4,{G},{S},{D}], "
           f"{KV}, {VV})")  # fused: dq_scratch and the unreduced dq as well

MODULE = f"""HloModule splash

%body (t: (s32[], {Q}, {KV}, {VV})) -> (s32[], {Q}, {KV}, {VV}) {{
  %t = (s32[], {Q}, {KV}, {VV}) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %q = {Q} get-tuple-element(%t), index=1
  %k = {KV} get-tuple-element(%t), index=2
  %next = {MASK} constant({{...}})
  %blocks = {MASK} constant({{...}})
  %seq = s32[{S},128] iota(), iota_dimension=0
  %v = {VV} get-tuple-element(%t), index=3
  %fwd = {FWD_OUT} custom-call(%next, %blocks, %q, %k, %v, %seq),
    custom_call_target="tpu_custom_call", {metadata(block_q=256, block_kv=512)},
    {op_name("splash_mqa_fwd_residuals")}
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  ROOT %r = (s32[], {Q}, {KV}, {VV}) tuple(%j, %q, %k, %v)
}}

%cond (c: (s32[], {Q}, {KV}, {VV})) -> pred[] {{
  %c = (s32[], {Q}, {KV}, {VV}) parameter(0)
  %n = s32[] get-tuple-element(%c), index=0
  %three = s32[] constant(3)
  ROOT %lt = pred[] compare(%n, %three), direction=LT
}}

ENTRY %main (q: {Q}, k: {KV}, v: {VV}, lse: {LSE}, do: bf16[{B},{G},{S},{DV}], di: {LSE},
             x: f32[8,128]) -> {Q} {{
  %q = {Q} parameter(0)
  %k = {KV} parameter(1)
  %v = {VV} parameter(2)
  %lse = {LSE} parameter(3)
  %do = bf16[{B},{G},{S},{DV}] parameter(4)
  %di = {LSE} parameter(5)
  %x = f32[8,128] parameter(6)
  %next = {MASK} constant({{...}})
  %blocks = {MASK} constant({{...}})
  %zero = s32[] constant(0)
  %init = (s32[], {Q}, {KV}, {VV}) tuple(%zero, %q, %k, %v)
  %loop = (s32[], {Q}, {KV}, {VV}) while(%init), condition=%cond, body=%body,
    backend_config={{"known_trip_count":{{"n":"3"}}}}
  %seq = s32[{S},128] iota(), iota_dimension=0
  %dq = {DQ_OUT} custom-call(%next, %blocks, %q, %k, %v, %lse, %do, %di, %seq),
    custom_call_target="tpu_custom_call", {metadata(block_q_dq=512, block_kv_dq=256)},
    {op_name("splash_mqa_dq_no_residuals")}
  %seqt = s32[8,{S}] iota(), iota_dimension=1
  %dkv = {DKV_OUT} custom-call(%next, %blocks, %q, %k, %v, %lse, %do, %di, %seqt),
    custom_call_target="tpu_custom_call",
    {metadata(block_q_dkv=128, block_kv_dkv=256, block_kv_dkv_compute=256)},
    {op_name("splash_mqa_dkv_no_residuals")}
  %other = f32[8,128] custom-call(%x), custom_call_target="tpu_custom_call",
    metadata={{op_name="jit(f)/my_kernel/pallas_call"}}
  ROOT %out = {Q} get-tuple-element(%dq), index=1
}}
"""


def visited_pairs(block_q: int, block_kv: int, s_q: int = S, s_kv: int = S) -> int:
    """Blocks of the element-level causal mask (query >= key) holding a visible score."""
    visible = np.tril(np.ones((s_q, s_kv), dtype=bool))
    blocks = visible.reshape(s_q // block_q, block_q, s_kv // block_kv, block_kv)
    return int(blocks.any(axis=(1, 3)).sum())


def nbytes(*shapes: tuple[str, tuple[int, ...]]) -> int:
    return sum(BYTES[dtype] * int(np.prod(dims)) for dtype, dims in shapes)


HEADS = int(np.prod(BATCH)) * G  # kernel launches' (batch, head) programs
q_, kv_, v_ = ("bf16", (*BATCH, G, S, D)), ("bf16", (*BATCH, S, D)), ("bf16", (*BATCH, S, DV))
lse_, do_ = ("f32", (*BATCH, G, 1, S)), ("bf16", (*BATCH, G, S, DV))
mask_ = ("s8", (1, 4, 4))

# Per visited pair and head, 2*bq*bkv times the contraction widths of the kernel's matmuls:
# fwd q.k^T (D), p.v (DV); dq q.k^T (D), do.v^T (DV), ds.k (D);
# fused dkv k.q^T (D), p^T.do (DV), v.do^T (DV), ds^T.q (D), ds.k (D, the fused dq).
EXPECTED = {
    "fwd": dict(
        flops=2 * 256 * 512 * (D + DV) * visited_pairs(256, 512) * HEADS,
        transcendentals=256 * 512 * visited_pairs(256, 512) * HEADS,
        bytes=nbytes(mask_, mask_, q_, kv_, v_, ("s32", (S, 128)), ("f32", (*BATCH, 256, 128)),
                     ("f32", (*BATCH, 256, 128)), ("f32", (*BATCH, 256, DV)),
                     ("bf16", (*BATCH, G, S, DV)), ("f32", (*BATCH, G, S, 128)))),
    "dq": dict(
        flops=2 * 512 * 256 * (D + DV + D) * visited_pairs(512, 256) * HEADS,
        transcendentals=512 * 256 * visited_pairs(512, 256) * HEADS,
        bytes=nbytes(mask_, mask_, q_, kv_, v_, lse_, do_, lse_, ("s32", (S, 128)),
                     ("f32", (*BATCH, 512, D)), q_)),
    "dkv": dict(
        flops=2 * 128 * 256 * (D + DV + DV + D + D) * visited_pairs(128, 256) * HEADS,
        transcendentals=128 * 256 * visited_pairs(128, 256) * HEADS,
        bytes=nbytes(mask_, mask_, q_, kv_, v_, lse_, do_, lse_, ("s32", (8, S)),
                     ("f32", (*BATCH, 128, D)), ("f32", (*BATCH, 256, D)),
                     ("f32", (*BATCH, 256, DV)), ("bf16", (*BATCH, 4, G, S, D)), kv_, v_)),
}


@pytest.fixture(scope="module")
def analysis() -> CostAnalysis:
    found = CostAnalysis(hloscope.load(MODULE))
    found.analyze_all()
    return found


@pytest.fixture(scope="module")
def result(analysis: CostAnalysis) -> FlopsResult:
    return flops(analysis)


def test_each_kernel_costs_its_closed_form(analysis: CostAnalysis) -> None:
    costs = {c.kernel.phase: c.kernel.cost for c in analysis.closed_form}
    assert set(costs) == set(EXPECTED)
    for phase, expected in EXPECTED.items():
        cost = costs[phase]
        assert (cost.flops, cost.transcendentals, cost.bytes_accessed) == (
            expected["flops"], expected["transcendentals"], expected["bytes"]), phase


def test_visited_pairs_and_matmuls_are_reported(result: FlopsResult) -> None:
    info = {c.phase: c for c in result.closed_form}
    assert (info["fwd"].visited_block_pairs, info["fwd"].block_pairs) == (
        visited_pairs(256, 512), (S // 256) * (S // 512))
    assert [info[p].matmuls_per_block_pair for p in ("fwd", "dq", "dkv")] == [2, 3, 5]
    assert info["dkv"].kernel == "splash_mqa_dkv_no_residuals"
    assert info["fwd"].flops_per_launch == (EXPECTED["fwd"]["flops"],)
    assert "causal" in info["fwd"].basis


def test_totals_count_the_kernels_with_loop_trip_counts(result: FlopsResult) -> None:
    """The forward kernel runs in a loop of 3 iterations; besides the kernels the module does
    the loop's add (3 times) and compare (4 times); the unknown kernel adds no FLOPs."""
    kernels = 3 * EXPECTED["fwd"]["flops"] + EXPECTED["dq"]["flops"] + EXPECTED["dkv"]["flops"]
    assert result.closed_form_flops == kernels
    assert result.total.flops == kernels + 3 + 4
    phases = {row.key: row.flops for row in result.rows("phase")}
    assert phases["forward"] == 3 * EXPECTED["fwd"]["flops"]
    assert phases["backward"] == EXPECTED["dq"]["flops"] + EXPECTED["dkv"]["flops"]


def test_unknown_pallas_kernels_stay_unattributed_and_the_report_says_which(
        result: FlopsResult) -> None:
    assert [(c.target, c.instructions) for c in result.unattributed] == [
        ("tpu_custom_call", ("other",))]
    data = result.to_dict()
    assert [c["kernel"] for c in data["closed_form_custom_calls"]] == [
        "splash_mqa_fwd_residuals", "splash_mqa_dq_no_residuals", "splash_mqa_dkv_no_residuals"]
    assert data["closed_form_flops"] == result.closed_form_flops
    assert data["unattributed_custom_calls"][0]["target"] == "tpu_custom_call"
    notes = " ".join(flops_report(result).notes)
    assert "closed form: these Pallas kernels" in notes and "causal mask assumed" in notes
    assert "unattributed" in notes and "tpu_custom_call x1" in notes


def test_xla_conventions_still_count_custom_calls_as_unknown() -> None:
    total = flops(hloscope.load(MODULE), options=CostOptions.like_xla())
    assert total.closed_form == [] and total.total.flops < 0


def test_multi_head_kernel_with_a_seq_minor_key() -> None:
    """`splash_mha`: k and v carry the key/value heads; k_layout 2 (SEQ_MINOR) puts the head
    dimension before the sequence. 4 query heads over 2 kv heads, 512 tokens, 128 blocks."""
    inner = json.dumps({"block_q": 128, "block_kv": 128, "q_layout": 1, "k_layout": 2,
                        "v_layout": 1})
    attributes = "frontend_attributes={kernel_metadata={" + json.dumps(
        {"xprof_metadata": inner})[1:-1] + "}}"
    text = f"""HloModule mha
ENTRY %main (q: bf16[3,4,512,64], k: bf16[3,2,64,512], v: bf16[3,2,512,32]) -> bf16[3,4,512,32] {{
  %q = bf16[3,4,512,64] parameter(0)
  %k = bf16[3,2,64,512] parameter(1)
  %v = bf16[3,2,512,32] parameter(2)
  %next = s32[1,4,4] constant({{...}})
  %blocks = s8[1,4,4] constant({{...}})
  %fwd = (f32[128,128], f32[128,128], f32[128,32], bf16[3,4,512,32]) custom-call(%next,
    %blocks, %q, %k, %v), custom_call_target="tpu_custom_call", {attributes},
    {op_name("splash_mha_fwd_no_residuals")}
  ROOT %o = bf16[3,4,512,32] get-tuple-element(%fwd), index=3
}}
"""
    result = flops(hloscope.load(text))
    pairs = visited_pairs(128, 128, 512, 512)
    assert pairs == 10
    assert result.total.flops == 2 * 128 * 128 * (64 + 32) * pairs * 3 * 4
    assert result.total.transcendentals == 128 * 128 * pairs * 3 * 4
