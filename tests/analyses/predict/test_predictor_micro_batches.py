"""The predictor's micro-batch count (gradient accumulation) against compiles recorded by
`python fixtures/make_predict_fixture.py ROOT micro` (tiny, tpu:v5e:2x2, seq 512, `--micro-batches
K`: XLA's memory-usage report of each build is the truth), from the `full` baselines of
fixtures/predict/tiny-v5e-2x2.json (compiled without accumulation); and the accumulation terms
against closed forms written out here."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from hloscope.analyses.predict.baseline import Baseline
from hloscope.analyses.predict.model import Predictor

FIXTURES = Path(__file__).parents[3] / "fixtures" / "predict"
BASELINES = tuple(Baseline.from_dict(b) for b in
                  json.loads((FIXTURES / "tiny-v5e-2x2.json").read_text())["baselines"])
COMPILED = json.loads((FIXTURES / "tiny-v5e-2x2-micro.json").read_text())["compiled"]
DEVICES, SEQ = 4, 512
SMALLEST = min(b.config["batch"] for b in BASELINES) // DEVICES  # sequences per device


def _sequences(compiled: dict) -> int:
    """Sequences of one micro-batch on one device."""
    return compiled["batch"] // DEVICES // compiled["micro_batches"]


def _policy(compiled: dict) -> str:
    return "names:*=remat" if compiled["policy"] == "full" else compiled["policy"]


IN_RANGE = [c for c in COMPILED if _sequences(c) >= SMALLEST]
BELOW = [c for c in COMPILED if _sequences(c) < SMALLEST]


def _id(compiled: dict) -> str:
    return f"{compiled['policy']}@{compiled['batch']}/k{compiled['micro_batches']}"


@pytest.mark.parametrize("compiled", IN_RANGE, ids=_id)
def test_micro_batched_policies_within_2_percent_of_the_compiled_allocation(compiled):
    """Measured: -1.37% to +0.29%; `names:*=device` is -1.37% here and -1.1% at the same
    micro-batch without accumulation (the per-name terms' own error), the accumulation terms
    add 2.97-3.23 MB where the compiles add 2.82-3.46 MB."""
    predicted = Predictor(BASELINES).predict(_policy(compiled), compiled["batch"],
                                             compiled["micro_batches"])
    assert predicted.device_bytes == pytest.approx(compiled["allocation_bytes"], rel=0.02)
    assert predicted.host_bytes == compiled["host_bytes"] == 0


@pytest.mark.parametrize("compiled", BELOW, ids=_id)
def test_below_the_baselines_the_prediction_is_positive_and_above_the_compile(compiled):
    """8 sequences per device and micro-batch, below the smaller baseline's 16: libtpu keeps
    the temporaries in on-chip VMEM (72 MiB of them at full remat; 32 MiB spill to HBM at 16
    sequences), so the HBM allocation falls to 10-12 MB; scaled from the smaller baseline the
    prediction stays an over-estimate (a line through both baselines would go negative)."""
    predicted = Predictor(BASELINES).predict(_policy(compiled), compiled["batch"],
                                             compiled["micro_batches"])
    assert predicted.device_bytes > compiled["allocation_bytes"] > 0


def test_accumulation_terms_are_the_closed_forms():
    """tiny: 527,872 parameters on every device (data parallel); AdamW state per parameter:
    bf16 parameter 2 B + fp32 master 4 B + two fp32 moments 8 B; tokens and targets int32."""
    params, tokens = 527_872, 16 * SEQ
    predicted = Predictor(BASELINES).predict("names:*=remat", 128, 2)
    accumulator = next(t for t in predicted.device_terms if "accumulator" in t.what)
    assert (accumulator.count, accumulator.unit) == (params, 4)
    held = next(t for t in predicted.device_terms if "did not hold" in t.what)
    assert held.value == 14 * params - BASELINES[0].fixed_bytes
    inputs = next(t for t in predicted.device_terms if "token ids" in t.what)
    assert inputs.value == 8 * tokens * (2 * 2 - 1)
    without = Predictor(BASELINES).predict("names:*=remat", 64, 1)
    assert predicted.device_bytes - without.device_bytes == (
        4 * params + held.value + inputs.value)
