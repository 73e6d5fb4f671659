"""The predictor against compiles recorded by fixtures/make_predict_fixture.py (tiny,
tpu:v5e:2x2, seq 512: XLA's memory-usage report of each build is the truth), and its terms
against closed forms written out here."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from hloscope.analyses.predict.baseline import Baseline
from hloscope.analyses.predict.flops import recompute_flops_per_token
from hloscope.analyses.predict.model import Predictor
from hloscope.configs.presets import preset_config

FIXTURE = Path(__file__).parents[3] / "fixtures" / "predict" / "tiny-v5e-2x2.json"
RECORD = json.loads(FIXTURE.read_text())
BASELINES = tuple(Baseline.from_dict(b) for b in RECORD["baselines"])
DEVICE_ONLY = [c for c in RECORD["compiled"] if "offload" not in c["policy"]]
OFFLOADED = [c for c in RECORD["compiled"] if "offload" in c["policy"]]
# tiny: 2 layers, d_model 128, d_ff 512; 4 devices of v5e:2x2, data parallel
LAYERS, H, F, SEQ, DEVICES, BF16 = 2, 128, 512, 512, 4, 2


@pytest.mark.parametrize("compiled", DEVICE_ONLY, ids=lambda c: f"{c['policy']}@{c['batch']}")
def test_device_policies_within_5_percent_of_the_compiled_allocation(compiled):
    predicted = Predictor(BASELINES).predict(compiled["policy"], compiled["batch"])
    assert predicted.device_bytes == pytest.approx(compiled["allocation_bytes"], rel=0.05)
    assert predicted.host_bytes == compiled["host_bytes"] == 0


def test_one_baseline_predicts_its_own_batch():
    """The whole space at the baseline's batch from the `full` build alone."""
    for compiled in (c for c in DEVICE_ONLY if c["batch"] == BASELINES[0].config["batch"]):
        predicted = Predictor(BASELINES[:1]).predict(compiled["policy"], compiled["batch"])
        assert predicted.device_bytes == pytest.approx(compiled["allocation_bytes"], rel=0.05)


@pytest.mark.parametrize("compiled", OFFLOADED, ids=lambda c: f"{c['policy']}@{c['batch']}")
def test_offloaded_policies_are_within_the_documented_bound(compiled):
    """Offload's device cost is a measured constant (model.OFFLOAD_DEVICE_COPIES): within 16%
    here, and the frontier search compiles to confirm."""
    predicted = Predictor(BASELINES).predict(compiled["policy"], compiled["batch"])
    assert predicted.device_bytes == pytest.approx(compiled["allocation_bytes"], rel=0.16)


def test_mlp_hidden_offload_host_bytes_are_the_closed_form_and_the_compiled_ones():
    compiled = next(c for c in OFFLOADED if c["policy"].endswith("mlp_hidden=offload"))
    local = compiled["batch"] // DEVICES
    closed = LAYERS * local * SEQ * F * BF16
    predicted = Predictor(BASELINES).predict(compiled["policy"], compiled["batch"])
    assert predicted.host_bytes == closed == compiled["host_bytes"]


def test_kept_name_terms_are_layers_times_the_closed_form():
    predicted = Predictor(BASELINES).predict("names:mlp_hidden=device", 64)
    per_layer = (64 // DEVICES) * SEQ * F * BF16
    kept = {t.what: t for t in predicted.device_terms if "mlp_hidden" in t.what}
    assert sorted((t.count, t.unit) for t in kept.values()) == [(-1, per_layer),
                                                                 (LAYERS, per_layer)]
    assert any(line.startswith("+2 × 8.00 MiB layers × mlp_hidden kept")
               for line in predicted.explain())


def test_recompute_flops_closed_form():
    config = preset_config("tiny", seq_len=SEQ)
    attention = 2 * SEQ * H  # Q·Kᵀ or P·V per token
    everything = 2 * H * 3 * H + 2 * attention + 2 * H * H + 2 * H * F
    assert recompute_flops_per_token(config, set()) == everything
    every_name = {"norm1", "qkv", "attn_out", "out_proj", "norm2", "mlp_in", "mlp_hidden"}
    assert recompute_flops_per_token(config, every_name) == attention  # the probabilities
    # mlp_hidden kept, mlp_in not: GELU's gradient still needs mlp_in, recomputed
    assert recompute_flops_per_token(config, {"mlp_hidden"}) == everything


def test_kept_names_lower_the_predicted_flops_by_the_recompute_they_save():
    predictor = Predictor(BASELINES)
    full, qkv = predictor.predict("names:*=remat", 64), predictor.predict("names:qkv=device", 64)
    tokens = 64 * SEQ // DEVICES
    assert full.flops - qkv.flops == LAYERS * tokens * 2 * H * 3 * H


def test_an_offloaded_name_costs_two_passes_of_hbm_over_keeping_it():
    """Same FLOPs, same device-kept set: offloading mlp_hidden adds its host bytes read once
    (to the host) and written once (back) at v5e's HBM bandwidth, 819 GB/s (memory-bound)."""
    predictor = Predictor(BASELINES)
    kept = predictor.predict("names:mlp_hidden=device", 64)
    offloaded = predictor.predict("names:mlp_hidden=offload", 64)
    assert kept.flops == offloaded.flops and kept.host_bytes == 0
    host = LAYERS * (64 // DEVICES) * SEQ * F * BF16
    assert offloaded.host_bytes == host
    assert offloaded.step_seconds - kept.step_seconds == pytest.approx(2 * host / 819e9,
                                                                       rel=1e-9)
