"""`StepPredictor` on a hand-made `full` baseline of a user's step and hand-made name costs,
against the closed forms of analyses/predict/step_model.py written out here."""
from __future__ import annotations

import pytest

from hloscope.analyses.predict.baseline import Baseline
from hloscope.analyses.predict.measured import MeasuredBlock, NameCost
from hloscope.analyses.predict.model import OFFLOAD_DEVICE_COPIES
from hloscope.analyses.predict.step_model import StepPredictor
from hloscope.analyses.roofline import estimate_step
from hloscope.devices import get_device
from hloscope.errors import UsageError

SEQ, BATCH, LAYERS = 32, 4, 4
TOKENS = BATCH * SEQ
ALLOCATION, FIXED, FLOPS = 1_000_000, 200_000, 10**9
BLOCK = MeasuredBlock(LAYERS, (NameCost("hidden", 100.0, 50.0), NameCost("act", 10.0, 0.0)),
                      BATCH, SEQ)


def baseline(target: str = "gpu:h100:1x1x1", batch: int = BATCH, seq: int = SEQ,
             **spans: int) -> Baseline:
    return Baseline("mine.py:make_step", target, "full",
                    {"step": {"batch": batch, "seq_len": seq, "compute_dtype": "bfloat16"}},
                    ALLOCATION, 0, FIXED, FLOPS, 10**8, 0, "test", **spans)


def full_at(tokens: int) -> float:
    return FIXED + (ALLOCATION - FIXED) / TOKENS * tokens


def test_a_kept_name_adds_its_layers_less_the_one_full_holds():
    tokens = 2 * TOKENS
    p = StepPredictor((baseline(),), block=BLOCK).predict("names:hidden=device", 2 * BATCH)
    assert p.device_bytes == pytest.approx(full_at(tokens) + (LAYERS - 1) * 100 * tokens, abs=2)
    assert p.flops == pytest.approx(FLOPS / TOKENS * tokens - LAYERS * tokens * 50, abs=2)
    assert p.host_bytes == 0 and p.step_seconds and p.step_seconds > 0
    assert any("× hidden kept" in line for line in p.explain())


def test_kept_stacks_fill_fulls_headroom_above_its_layer_span_first():
    headroom = 2_000
    b = baseline(live_peak_bytes=900_000, layer_span_peak_bytes=900_000 - headroom,
                 outside_span_peak_bytes=900_000)
    p = StepPredictor((b,), block=BLOCK).predict("names:act=device", BATCH)
    stacks = (LAYERS - 1) * 10 * TOKENS
    assert stacks > headroom
    assert p.device_bytes == pytest.approx(ALLOCATION + stacks - headroom, abs=2)


def test_offload_off_tpu_without_spans_costs_the_measured_copies_and_host_layers():
    p = StepPredictor((baseline(),), block=BLOCK).predict("names:hidden=offload", BATCH)
    assert p.device_bytes == pytest.approx(ALLOCATION + OFFLOAD_DEVICE_COPIES * 100 * TOKENS,
                                           abs=2)
    assert p.host_bytes == LAYERS * 100 * TOKENS
    assert p.flops == pytest.approx(FLOPS - LAYERS * TOKENS * 50, abs=2)


def test_two_baselines_give_the_line_through_them():
    low, high = baseline(), baseline(batch=3 * BATCH)
    high = Baseline(**{**high.to_dict(), "allocation_bytes": 2_200_000})
    p = StepPredictor((low, high), block=BLOCK).predict("names:*=remat", 2 * BATCH)
    assert p.device_bytes == pytest.approx(1_600_000, abs=2)  # half way between them


def test_a_kept_names_measured_traffic_is_in_the_memory_bound_step():
    """H100 roofline by hand: HBM bytes = the baseline's scaled + L × tokens × the name's added
    traffic per token (a memory-bound step: 10^12 B against 10^9 FLOPs)."""
    hbm, added = 10**12, 500_000_000.0
    block = MeasuredBlock(LAYERS, (NameCost("hidden", 100.0, 50.0, added),), BATCH, SEQ)
    b = Baseline(**{**baseline().to_dict(), "hbm_bytes": hbm})
    p = StepPredictor((b,), block=block).predict("names:hidden=device", 2 * BATCH)
    h100 = get_device("h100")
    by_hand = estimate_step(h100, "bfloat16", p.flops, 2 * hbm + LAYERS * 2 * TOKENS * added,
                            0, 0, 0).overlapped_seconds
    without = estimate_step(h100, "bfloat16", p.flops, 2 * hbm, 0, 0, 0).overlapped_seconds
    assert p.step_seconds == pytest.approx(by_hand, rel=1e-9)
    assert p.step_seconds > 1.1 * without
    remat = StepPredictor((b,), block=block).predict("names:*=remat", 2 * BATCH)
    assert remat.step_seconds == pytest.approx(without, rel=1e-9)  # HBM-bound: FLOPs aside


def test_refusals():
    with pytest.raises(UsageError, match="micro-batches"):
        StepPredictor((baseline(),), block=BLOCK).predict("names:*=remat", BATCH, 2)
    with pytest.raises(UsageError, match="sequence"):
        StepPredictor((baseline(seq=64),), block=BLOCK)
    with pytest.raises(UsageError, match="measured"):
        StepPredictor((baseline(),))
