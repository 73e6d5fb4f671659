"""The remedy closed forms of `hloscope oom` on hand-computed configs (no compiles).

Truths: byte counts worked out by hand from the formulas of docs/oom.md for small configs (and,
for the per-layer forms, the residuals JAX itself reports: tests/analyses/oom/test_oom.py), the
structure of nested remat (L/B outer carries + B inner ones), the divisors of a batch, and the
mesh a multislice target gets (FSDP over one slice's ICI devices, data parallelism across
slices).
"""
from __future__ import annotations

import pytest

from hloscope.analyses.oom.analytic import (
    activation_bytes,
    activation_bytes_none,
    fsdp_ways,
    layer_matrix_bytes,
    loss_chunk_bytes,
    loss_saved_bytes,
    nested_saved_bytes,
    optimizer_bytes,
    parameters_per_device,
)
from hloscope.analyses.oom.diagnosis import _host_checked
from hloscope.analyses.oom.remedies import (
    PeakParts,
    Remedy,
    micro_batch_divisors,
    micro_batch_remedies,
    nested_blocks,
    optimizer_offload_remedy,
    rank_remedies,
    remat_remedies,
)
from hloscope.configs.config import param_count
from hloscope.configs.presets import preset_config
from hloscope.devices import GB

# tiny at 2 x 32 tokens: b·s = 64, h = kv = 128, a = 4, f = 512, vocab 512 (GELU, LayerNorm)
TINY = {"batch": 2, "seq_len": 32}
# Llama style, small: h = 64, a = 4, kv = 2 heads x 16 = 32, f = 96 (SwiGLU)
LLAMA = {"batch": 2, "seq_len": 32, "d_model": 64, "n_heads": 4, "n_kv_heads": 2, "d_ff": 96,
         "vocab": 128}


def tiny(**overrides: object):
    return preset_config("tiny", **{**TINY, **overrides})


def test_plain_attention_saves_the_score_terms() -> None:
    # 32bsh 262,144 + 4bs·kv 32,768 + 12bsf 393,216 + 11bas² 90,112 + 16bs 1,024 + 8bas 2,048
    assert activation_bytes_none(tiny(), 2) == 781_312


def test_blockwise_attention_saves_no_scores() -> None:
    # the score terms (92,160) give way to the output copy 2bsh 16,384 and the lse 4bas 1,024
    for attention in ("blockwise", "splash"):
        assert activation_bytes_none(tiny(attention=attention), 2) == 706_560


def test_blockwise_attention_closed_form_llama() -> None:
    # 32bsh 131,072 + 4bs·kv 8,192 + 12bsf 73,728 + 16bs 1,024 + 2bsh 8,192 + 4bas 1,024
    # + RoPE 8·s·head_dim 4,096
    config = preset_config("llama-1b", **LLAMA, attention="blockwise")
    assert activation_bytes_none(config, 2) == 227_328


def test_dots_with_no_batch_dims_saves_every_projection_the_backward_needs() -> None:
    # input 2bsh + Q/K/V 2bsh + 4bs·kv + out projection 2bsh + MLP input(s) 2bsf (SwiGLU 4bsf)
    assert activation_bytes(tiny(), 2, "dots_with_no_batch_dims_saveable") == 147_456
    llama = preset_config("llama-1b", **LLAMA)
    assert activation_bytes(llama, 2, "dots_with_no_batch_dims_saveable") == 57_344


def test_carry_offload_keeps_nothing_per_layer_on_the_device() -> None:
    assert activation_bytes(tiny(), 2, "offload_carries") == 0
    assert activation_bytes(tiny(), 2, "full") == 16_384  # 2bsh


def test_plain_loss_keeps_the_logits_and_blockwise_does_not() -> None:
    assert loss_saved_bytes(tiny(), 2) == 4 * 64 * 512 + 8 * 64  # fp32 softmax + two per token
    assert loss_saved_bytes(tiny(loss="blockwise"), 2) == 2 * 64 * 128 + 4 * 64
    assert loss_chunk_bytes(tiny(), 2) == 6 * 64 * 512  # bf16 + fp32 logits, all positions
    assert loss_chunk_bytes(tiny(loss="blockwise", loss_chunk=8), 2) == 6 * 2 * 8 * 512


@pytest.mark.parametrize("layers, blocks", [(80, [8, 10]), (16, [4]), (12, [3, 4]), (4, [2]),
                                            (7, [])])
def test_nested_block_sizes_are_the_divisors_nearest_the_root(layers: int,
                                                              blocks: list[int]) -> None:
    assert nested_blocks(layers) == blocks


def test_nested_keeps_outer_and_inner_carries() -> None:
    config = tiny(n_layers=16, scan_layers=True)
    x = 2 * 2 * 32 * 128  # one bf16 layer input
    assert nested_saved_bytes(config, 2, 4) == (16 // 4 + 4) * x
    assert nested_saved_bytes(config, 2, 2) == (8 + 2) * x
    # 70B at 6 sequences x 4096 tokens per chip: 80 x [6,4096,8192] bf16 = 30 GiB under full;
    # nested:8 keeps 10 + 8 of them = 6.75 GiB (the figures)
    llama = preset_config("llama-70b", seq_len=4096, batch=6)
    assert 80 * activation_bytes(llama, 6, "full") == 30 * 2**30
    assert nested_saved_bytes(llama, 6, 8) == 6.75 * 2**30


def parts(layers: int = 16) -> PeakParts:
    return PeakParts(model_state=1_000_000, saved=5_000_000, rest=200_000,
                     largest_saved_per_layer=30_000, layers=layers, allocation_ratio=1.0)


def test_remat_remedies_predict_nested_and_carry_offload() -> None:
    config = tiny(n_layers=16, scan_layers=True)
    x = 16_384
    found = {r.name: r for r in remat_remedies(parts(), config, 2, None)}
    assert found["remat:nested:4"].predicted_bytes == 1_000_000 + 8 * x + 200_000 + 30_000
    assert found["remat:nested:4"].config == {"remat": "nested:4"}
    assert found["remat:offload_carries"].predicted_bytes == 1_000_000 + 2 * x + 200_000 + 30_000
    assert found["remat:full"].predicted_bytes == 1_000_000 + 16 * x + 200_000 + 30_000
    assert found["remat:dots_with_no_batch_dims_saveable"].predicted_bytes == \
        1_000_000 + 16 * 147_456 + 200_000 + 30_000
    assert found["remat:nested:4"].extra_flops == 2 * found["remat:full"].extra_flops


def test_stronger_policies_only() -> None:
    config = tiny(n_layers=16, scan_layers=True, remat="full", remat_block=4)
    names = [r.name for r in remat_remedies(parts(), config, 2, None)]
    assert names == ["remat:offload_carries", "remat:offload_scan"]


@pytest.mark.parametrize("batch, current, counts", [
    (6, 1, [2, 3, 6]), (12, 1, [2, 3, 4, 6, 12]), (12, 2, [4, 6, 12]), (12, 3, [6, 12]),
    (1, 1, [])])
def test_micro_batch_counts_are_every_divisor(batch: int, current: int, counts: list[int]) -> None:
    assert micro_batch_divisors(batch, current) == counts


def micro(capacity: int | None, per_shard: int, params: int = 0, **overrides: object) -> dict:
    state = PeakParts(model_state=100, saved=1_000, rest=200, largest_saved_per_layer=0,
                      layers=2, allocation_ratio=1.0)
    found = micro_batch_remedies(state, tiny(batch=per_shard * 4, **overrides), capacity, params,
                                 per_shard)
    return {r.name: r.predicted_bytes for r in found}


def test_micro_batches_list_the_smallest_fit_and_its_neighbours() -> None:
    # 100 + 1200/k: k=2 700, 3 500, 4 400, 6 300, 12 200
    assert micro(450, 12) == {"micro-batch:3": 500, "micro-batch:4": 400, "micro-batch:6": 300}
    assert micro(450, 6) == {"micro-batch:3": 500, "micro-batch:6": 300}
    assert micro(1_000, 12) == {"micro-batch:2": 700, "micro-batch:3": 500}
    assert micro(None, 6) == {"micro-batch:2": 700, "micro-batch:3": 500}
    assert micro(150, 6) == {"micro-batch:3": 500, "micro-batch:6": 300}  # none fits: the most


def test_micro_batch_accumulator_and_existing_accumulation() -> None:
    # 4 bytes per parameter on the device, only when the step has no accumulator yet
    assert micro(None, 12, params=25)["micro-batch:2"] == 100 + 600 + 100
    # the step already runs 2 micro-batches of 6: 4 of 3 halves the activations again
    assert micro(None, 12, params=25, micro_batches=2)["micro-batch:4"] == 100 + 600


def test_multislice_fsdp_shards_over_one_slice() -> None:
    config = preset_config("llama-70b", seq_len=4096, batch=3072)  # fsdp on, 4 x 128 chips
    assert config.fsdp
    assert fsdp_ways(config, devices=512, num_slices=4) == 128
    assert fsdp_ways(config, devices=128, num_slices=1) == 128
    assert parameters_per_device(config, param_count(config), 512, 4) == \
        param_count(config) // 128
    tensor = preset_config("llama-70b", seq_len=4096, batch=3072, tensor_parallel=4)
    assert fsdp_ways(tensor, devices=512, num_slices=4) == 32
    assert parameters_per_device(tensor, 1_280, 512, 4) == 1_280 // 128
    stated = preset_config("llama-70b", batch=3072, ici_fsdp_parallel=16)
    assert fsdp_ways(stated, devices=512, num_slices=4) == 16


def test_prediction_error_is_relative_to_the_compiled_figure() -> None:
    remedy = Remedy("remat:full", "", 110, 0, 0.0, "", compiled_bytes=100)
    assert remedy.prediction_error == pytest.approx(0.10)
    assert remedy.to_dict()["prediction_error"] == pytest.approx(0.10)
    assert Remedy("fsdp", "", 110, 0, 0.0, "").prediction_error is None


def test_recompute_levels_keep_the_projections_and_the_names_they_do_not_recompute() -> None:
    # dots 147,456 + the named norm1, norm2, attn_out (2bsh = 16,384 each) recompute:1 keeps,
    # + attn_out only for recompute:2 (tiny: b·s = 64, h = 128)
    assert activation_bytes(tiny(), 2, "recompute:1") == 147_456 + 3 * 16_384
    assert activation_bytes(tiny(), 2, "recompute:2") == 147_456 + 16_384


def test_recompute_and_offload_scan_remedies() -> None:
    config = tiny(n_layers=16, scan_layers=True)
    x = 16_384
    p = 2 * (2 * 128 * 128 + 2 * 128 * 128 + 2 * 128 * 512) // 4  # bf16 matrices, 4 shards
    found = {r.name: r for r in remat_remedies(parts(), config, 2, None, shards=4)}
    assert found["remat:recompute:1"].predicted_bytes == \
        1_000_000 + 16 * (147_456 + 3 * 16_384) + 200_000 + 30_000
    assert found["remat:recompute:2"].predicted_bytes == \
        1_000_000 + 16 * (147_456 + 16_384) + 200_000 + 30_000
    assert found["remat:recompute:1"].extra_flops == \
        found["remat:dots_with_no_batch_dims_saveable"].extra_flops
    scan = found["remat:offload_scan"]
    assert scan.predicted_bytes == 1_000_000 + 2 * (x + p) + 200_000 + 30_000
    assert scan.host_bytes == 16 * (x + p) and scan.config == {"remat": "offload_scan"}
    assert found["remat:offload_carries"].host_bytes == 16 * x
    unrolled = [r.name for r in remat_remedies(parts(), tiny(n_layers=16), 2, None)]
    assert "remat:offload_scan" not in unrolled  # it scans over layers


def test_optimizer_offload_remedy() -> None:
    config = tiny(n_layers=16, scan_layers=True)
    state = PeakParts(model_state=5_000, saved=20_000, rest=3_000, largest_saved_per_layer=0,
                      layers=16, allocation_ratio=1.0)
    # 100 parameters per device: O = 12 B x 100 on the host; the update holds 16 B x 100
    remedy = optimizer_offload_remedy(state, config, optimizer_live=1_200,
                                      parameters_per_device=100)
    assert remedy.predicted_bytes == 5_000 + 20_000 + 3_000 - 1_200
    assert remedy.host_bytes == 1_200 and remedy.config == {"optimizer_offload": True}
    small = PeakParts(model_state=1_500, saved=100, rest=0, largest_saved_per_layer=0,
                      layers=16, allocation_ratio=1.0)
    assert optimizer_offload_remedy(small, config, 1_200, 100).predicted_bytes == 1_600  # U
    assert optimizer_offload_remedy(state, tiny(optimizer_offload=True), 1_200, 100) is None
    assert optimizer_offload_remedy(state, config, 0, 100) is None


def test_host_ram_decides_whether_an_offload_remedy_fits() -> None:
    # v5e: 384 GB of host RAM per 8 chips (devices.py); 50 GB per device is 400 GB per host
    fits = _host_checked(Remedy("remat:offload_carries", "", 1, 0, 0.0, "", host_bytes=40 * GB),
                         "v5e")
    too_much = _host_checked(Remedy("remat:offload_carries", "", 1, 0, 0.0, "",
                                    host_bytes=50 * GB), "v5e")
    assert fits.host_fits is True and too_much.host_fits is False
    assert "400" in too_much.host_reason or "GiB" in too_much.host_reason
    ranked = rank_remedies([too_much, fits], capacity=10)
    assert [(r.name, r.fits) for r in ranked] == [("remat:offload_carries", True),
                                                  ("remat:offload_carries", False)]
    assert _host_checked(Remedy("fsdp", "", 1, 0, 0.0, ""), "v5e").host_fits is None


def test_layer_matrix_bytes() -> None:
    # Llama block: q, out h x h, k, v h x kv, gate/up/down h x f (bf16), split 2 ways
    config = preset_config("llama-1b", **LLAMA)
    assert layer_matrix_bytes(config, 2) == 2 * (2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 96) // 2
    assert optimizer_bytes(config, 1_000) == 12_000
    assert optimizer_bytes(preset_config("tiny", param_dtype="float32"), 1_000) == 8_000
