"""libtpu's memory-pressure rematerialization in the predictor, against libtpu's own log of the
frontier benchmarks' compiles (fixtures/predict/llama-v5e-squeezed.json, made by
fixtures/make_squeeze_fixture.py: llama-1b / v5e:2x2 and llama-8b / v5e:4x4, seq 2048, their
`full` builds as baselines), and against the rule written out by hand."""
from __future__ import annotations

import dataclasses

import pytest
from squeeze_record import RECORD, predictor

from hloscope.analyses.predict.baseline import Baseline, remat_percent_flag
from hloscope.analyses.predict.model import (
    DEFERRED_MARGIN,
    RECOMPUTED_LOGITS,
    SQUEEZE_LANDING,
    Predictor,
)
from hloscope.errors import UsageError

GIB = 2**30


def compiled(model: str, squeezed: bool | None = None, fits: bool = False) -> list[dict]:
    return [c for c in RECORD[model]["compiled"]
            if (squeezed is None or bool(c["libtpu_remat"]) == squeezed)
            and (not fits or c["allocation_bytes"])]


@pytest.mark.parametrize("model", sorted(RECORD))
def test_the_limit_is_libtpus(model):
    """95% of the usable HBM less unaliased arguments and the program, against the limit libtpu
    logged for every compile it rematerialized: within 0.5% (measured 0.01%..0.41%; libtpu's
    overlays are not quite the generated code the baseline records)."""
    pr = predictor(model)
    for c in compiled(model, squeezed=True):
        limit = pr.predict(c["policy"], c["batch"]).remat_limit_bytes
        assert limit == pytest.approx(c["libtpu_remat"]["limit_bytes"], rel=0.005)


@pytest.mark.parametrize(("model", "agreeing"), [("llama-1b", 0.99), ("llama-8b", 1.0)])
def test_squeezed_is_whether_libtpu_rematerialized(model, agreeing):
    """The need over the limit <=> libtpu logged a rematerialization: 182 of 183 llama-1b
    compiles and 73 of 73 llama-8b (175 of 180 and 68 of 73 before the layer loops' span was
    measured: the kept stacks under `full`'s headroom, offload's two moments)."""
    pr = predictor(model)
    every = compiled(model)
    same = sum(pr.predict(c["policy"], c["batch"]).squeezed == bool(c["libtpu_remat"])
               for c in every)
    assert same / len(every) >= agreeing


@pytest.mark.parametrize(("model", "within"), [("llama-1b", 0.05), ("llama-8b", 0.06)])
def test_a_squeezed_allocation_lands_near_the_limit(model, within):
    """Compiles libtpu rematerialized and that fit: the predicted allocation within 5% / 6% of
    XLA's (measured -4.9%..+2.3% on llama-1b, 14 compiles, -4.9%..+7.2% before the deferred
    logits were measured; -5.8%..+4.3% on llama-8b, 22), where the need alone is up to 24.0% /
    12.1% over it."""
    pr = predictor(model)
    errors, needs = [], []
    for c in compiled(model, squeezed=True, fits=True):
        p = pr.predict(c["policy"], c["batch"])
        errors.append(p.allocation_bytes / c["allocation_bytes"] - 1)
        needs.append(p.device_bytes / c["allocation_bytes"] - 1)
    assert len(errors) >= 10
    assert max(map(abs, errors)) <= within
    assert max(needs) > 0.10


def test_the_deferred_bytes_are_the_logits_and_the_embedding_shard():
    """What llama-1b's `full` holds through its backward loop: the bf16 logits [b, s, vocab]
    and the embedding table, gathered [vocab, d_model] at per-device batches 1 and 2, its shard
    [vocab, d_model / 4] from 3 (closed forms, within 0.1%; the rest are token ids and
    per-token statistics). llama-8b holds less than its gathered table: no logits."""
    for base in RECORD["llama-1b"]["baselines"]:
        config = base["config"]
        batch = config["batch"] // 4
        logits = batch * config["seq_len"] * config["vocab"] * 2
        table = config["vocab"] * config["d_model"] * 2
        held = table if batch <= 2 else table // 4
        assert base["deferred_bytes"] == pytest.approx(logits + held, rel=0.001)
    for base in RECORD["llama-8b"]["baselines"]:
        config = base["config"]
        assert 0 < base["deferred_bytes"] < config["vocab"] * config["d_model"] * 2


def test_past_the_first_cut_libtpu_recomputes_the_deferred_logits():
    """llama-1b's kept-name programs more than the gathered table over the limit: libtpu
    recomputes the logits after the backward loop and lands well under the limit. The deferred
    landing is within 3.5% of XLA's allocation (measured -3.2%..+2.3%, 9 compiles) where
    SQUEEZE_LANDING × the limit is up to 7.2% over it."""
    pr = predictor("llama-1b")
    errors, at_the_limit = [], []
    for c in compiled("llama-1b", squeezed=True, fits=True):
        p = pr.predict(c["policy"], c["batch"])
        if p.deferred_landing(p.device_bytes) is None:
            continue
        errors.append(p.allocation_bytes / c["allocation_bytes"] - 1)
        at_the_limit.append(SQUEEZE_LANDING * p.remat_limit_bytes / c["allocation_bytes"] - 1)
    assert len(errors) >= 8
    assert max(map(abs, errors)) <= 0.035
    assert max(at_the_limit) > 0.07


def test_the_deferred_landing_by_hand():
    """Over the limit by no more than the first cut and DEFERRED_MARGIN of the limit: near the
    limit; by more: the need less the deferred cut, not below `full`'s outside floor; still
    over the limit: near it."""
    p = dataclasses.replace(predictor("llama-1b").predict("names:mlp_up=device", 24),
                            remat_limit_bytes=10 * GIB, first_cut_bytes=GIB // 2,
                            deferred_cut_bytes=3 * GIB, outside_floor_bytes=8 * GIB)
    near = round(SQUEEZE_LANDING * 10 * GIB)
    past = GIB // 2 + round(DEFERRED_MARGIN * 10 * GIB)
    assert p.allocation_for(10 * GIB) == 10 * GIB
    assert p.allocation_for(10 * GIB + GIB // 2) == near
    assert p.allocation_for(10 * GIB + past) == near
    assert p.allocation_for(10 * GIB + past + 1) == 8 * GIB
    assert p.allocation_for(12 * GIB) == 9 * GIB
    assert p.allocation_for(14 * GIB) == near
    assert p.deferred_landing(12 * GIB) == 9 * GIB and p.deferred_landing(14 * GIB) is None


def test_no_deferred_landing_offloaded_or_beyond_the_baselines():
    """With a name offloaded the loss runs elsewhere; beyond the largest baseline `full`'s
    floor would be extrapolated."""
    pr = predictor("llama-1b")
    largest = max(b["config"]["batch"] for b in RECORD["llama-1b"]["baselines"])
    assert pr.predict("names:mlp_up=device", largest).deferred_cut_bytes > 0
    assert pr.predict("names:mlp_up=offload", largest).deferred_cut_bytes == 0
    assert pr.predict("names:mlp_up=device", largest + 4).deferred_cut_bytes == 0


def test_under_the_limit_the_allocation_is_the_need_and_over_it_the_landing():
    pr = predictor("llama-1b")
    small, large = pr.predict("names:*=remat", 4), pr.predict("names:*=device", 28)
    assert not small.squeezed and small.allocation_bytes == small.device_bytes
    assert large.squeezed and large.device_bytes > 20 * GIB
    assert large.allocation_bytes == round(SQUEEZE_LANDING * large.remat_limit_bytes)
    assert any("rematerialization limit" in line for line in large.explain())
    usable = 15.75 * GIB  # v5e; the baseline's unaliased arguments and program below
    base = Baseline.from_dict(RECORD["llama-1b"]["baselines"][0])
    assert large.remat_limit_bytes == int(usable * 95 // 100) - base.unaliased_argument_bytes \
        - base.program_bytes


def test_no_limit_off_tpu():
    base = Baseline.from_dict({**RECORD["llama-1b"]["baselines"][0], "target": "gpu:h100:1x1x4"})
    p = Predictor((base,)).predict("names:*=device", 28)
    assert p.remat_limit_bytes is None and not p.squeezed
    assert p.allocation_bytes == p.device_bytes


def test_any_need_is_squeezed_to_the_same_landing():
    """The frontier search's figure for a candidate (its need raised by a compiled neighbour's
    error) becomes an allocation by the same rule as the prediction's own need."""
    p = predictor("llama-1b").predict("names:*=remat", 4)
    limit = p.remat_limit_bytes
    assert p.allocation_for(p.device_bytes) == p.allocation_bytes
    assert p.allocation_for(limit) == limit
    assert p.allocation_for(limit + 1) == round(SQUEEZE_LANDING * limit)
    assert p.allocation_for(2 * limit) == round(SQUEEZE_LANDING * limit)


@pytest.mark.parametrize(("flags", "percent"), [
    ({"user": [], "environment": {}}, None),
    ({"user": ["--xla_jf_rematerialization_percent_shared_memory_limit=80"]}, 80),
    ({"environment": {"LIBTPU_INIT_ARGS": "--xla_tpu_foo=1 "
                      "--xla_jf_rematerialization_percent_shared_memory_limit=90"}}, 90),
    ({"user": ["--xla_jf_rematerialization_percent_shared_memory_limit=70",
               "--xla_jf_rematerialization_percent_shared_memory_limit=60"]}, 60),
    ({"user": ["--xla_jf_rematerialization_percent_shared_memory_limit"]}, None),
])
def test_the_remat_percent_a_build_gave_libtpu(flags, percent):
    assert remat_percent_flag(flags) == percent


def test_the_limit_follows_the_baselines_percent():
    base = Baseline.from_dict(RECORD["llama-1b"]["baselines"][0])
    default = Predictor((base,)).predict("names:*=remat", 4)
    eighty = Predictor((dataclasses.replace(base, remat_percent=80),)).predict(
        "names:*=remat", 4)
    usable = round(15.75 * GIB)
    assert default.remat_limit_bytes - eighty.remat_limit_bytes == \
        usable * 95 // 100 - usable * 80 // 100
    assert eighty.remat_percent == 80 and default.remat_percent == 95
    with pytest.raises(UsageError, match="different"):
        Predictor((base, dataclasses.replace(base, remat_percent=80)))


def test_the_logits_libtpu_recomputes_are_in_the_flops():
    """llama-1b programs libtpu rematerialized and that fit: the predicted FLOPs against
    hloscope's FLOPs of the compiled program (the measure of the baselines'). Past the gathered
    table libtpu runs the logits matmul again after the backward loop: with that term every one
    is within 0.5% (measured +0.11%..+0.20%, 14), without it those 12 were 5.0%..5.6% under.
    (llama-8b's squeezed programs add 0 to 2.1 logits matmuls, no rule found: -4.2%..+0.1%.)"""
    pr = predictor("llama-1b")
    errors, recomputed = [], 0
    for c in compiled("llama-1b", squeezed=True, fits=True):
        p = pr.predict(c["policy"], c["batch"])
        errors.append(p.flops / c["flops"] - 1)
        recomputed += any(t.what.startswith(RECOMPUTED_LOGITS) for t in p.flop_terms)
    assert len(errors) >= 10 and recomputed >= 10
    assert max(map(abs, errors)) <= 0.005
