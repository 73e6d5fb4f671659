"""A predicted candidate's step: its `full` baseline's per-op step scaled (`scaled_step`).

Truths: the formula worked by hand from the device facts (closed forms), and the steps measured
on a real H100 (benchmarks/results/gpu_measured_llama1b_h100.json): the `full` program's
per-op step is the only input, and the other four policies are predicted from it, uncompiled.
"""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from hloscope.analyses.cost.flops import flops
from hloscope.analyses.predict.baseline import Baseline
from hloscope.analyses.predict.model import Predictor
from hloscope.analyses.predict.scaled_step import (
    BaselineStep,
    StepChange,
    baseline_step,
    predicted_step,
)
from hloscope.analyses.steptime import step_time
from hloscope.analyses.steptime.calibration import CALIBRATIONS
from hloscope.api import as_module
from hloscope.configs.presets import preset_config
from hloscope.configs.tensors import encode_named
from hloscope.devices import get_device
from hloscope.sweeps.frontier import Candidate, _speed, frontier_names

ROOT = Path(__file__).resolve().parents[3]
BASE = BaselineStep(seconds=1.0, exposed_seconds=0.1, forward_seconds=0.3, backward_seconds=0.5)
TIE = 0.03  # measured steps closer than this may come out in either order


def rates(name: str) -> tuple[float, float]:
    device, table = get_device(name), CALIBRATIONS[name]
    assert device.peak_flops.bf16 is not None and device.hbm_bandwidth is not None
    return (device.peak_flops.bf16 * table.matmul_efficiency.value,
            device.hbm_bandwidth * table.memory_efficiency.value)


def step(name: str, change: StepChange) -> float:
    found = predicted_step(BASE, get_device(name), "bfloat16", change)
    assert found is not None
    return found.seconds


def test_the_compute_stream_scales_with_the_tokens_and_the_link_waits_do_not() -> None:
    assert step("h100", StepChange(2.0, 0.0, 0.0, 0.0)) == pytest.approx(0.9 * 2 + 0.1)


def test_recompute_saved_is_charged_at_the_matmul_rate_and_kept_bytes_at_hbm_twice() -> None:
    matmul, memory = rates("h100")
    saved, kept = 3e13, 5e9
    assert step("h100", StepChange(1.0, -saved, kept, 0.0)) == pytest.approx(
        1.0 - saved / matmul + 2 * kept / memory)


def test_gpu_host_transfers_are_exposed_whole_both_ways() -> None:
    _, memory = rates("h100")
    moved = 4e9
    link = CALIBRATIONS["h100"].host_link.value  # one device per H100 chip
    found = predicted_step(BASE, get_device("h100"), "bfloat16", StepChange(1, 0, moved, moved))
    assert found is not None
    assert found.host_exposed_seconds == pytest.approx(2 * moved / link)
    assert found.seconds == pytest.approx(1.0 + 2 * moved / memory + 2 * moved / link)


def test_tpu_host_transfers_hide_behind_their_phase_up_to_its_compute() -> None:
    link = CALIBRATIONS["v5e"].host_link.value
    hidden = predicted_step(BASE, get_device("v5e"), "bfloat16",
                            StepChange(1, 0, 0, 0.2 * link))  # 0.2 s each way: under both phases
    over = predicted_step(BASE, get_device("v5e"), "bfloat16",
                          StepChange(1, 0, 0, 0.4 * link))  # 0.4 s: over the forward's 0.3
    assert hidden is not None and over is not None
    assert hidden.host_exposed_seconds == 0.0
    assert over.host_exposed_seconds == pytest.approx(0.4 - 0.3)


def test_a_device_without_a_calibration_has_no_scaled_step() -> None:
    assert predicted_step(BASE, get_device("cpu"), "float32", StepChange(1, 0, 0, 0)) is None


def h100_plain_baseline() -> Baseline:
    module = as_module(ROOT / "fixtures/steptime/h100_plain_full.hlo.gz")
    timed = step_time(module, get_device("h100"))
    assert timed is not None
    base = baseline_step(timed)
    config = preset_config("llama-1b", seq_len=2048, batch=8, remat="full")
    return Baseline("llama-1b", "gpu:h100:1x1x1", "full", config.to_dict(), 0, 0, 0,
                    int(flops(module).total.flops), 0, 0, "test", step_seconds=base.seconds,
                    step_exposed_seconds=base.exposed_seconds,
                    step_forward_seconds=base.forward_seconds,
                    step_backward_seconds=base.backward_seconds)


@pytest.fixture(scope="module")
def h100() -> Predictor:
    return Predictor((h100_plain_baseline(),))


def measured_plain() -> dict[str, float]:
    data = json.loads((ROOT / "benchmarks/results/gpu_measured_llama1b_h100.json").read_text())
    return {row["policy"]: min(row["step_times_us"]) / 1e6 for row in data["rows"]}


def predicted(predictor: Predictor, policy: str) -> float:
    found = predictor.predict("names:*=remat" if policy == "full" else policy, 8).step_seconds
    assert found is not None
    return found


def test_h100_steps_predicted_from_full_alone_are_within_15_percent_of_measured(
        h100: Predictor) -> None:
    for policy, measured in measured_plain().items():
        assert abs(predicted(h100, policy) / measured - 1) <= 0.15, policy


def test_h100_measured_order_is_reproduced_from_full_alone(h100: Predictor) -> None:
    rows = [(measured, predicted(h100, policy)) for policy, measured in measured_plain().items()]
    assert len(rows) == 5
    for (measured_a, predicted_a), (measured_b, predicted_b) in itertools.permutations(rows, 2):
        if measured_b / measured_a - 1 >= TIE:
            assert predicted_a < predicted_b


def test_candidates_tie_only_where_their_flops_kept_and_moved_bytes_are_equal(
        h100: Predictor) -> None:
    names = frontier_names(h100.base.transformer)
    by_step: dict[float, set[tuple[int, int, int]]] = {}
    for combo in itertools.product(("remat", "device", "offload"), repeat=len(names)):
        found = h100.predict(encode_named(dict(zip(names, combo, strict=True)), names), 8)
        kept = sum(t.value for t in found.device_terms if t.what.endswith(" kept"))
        assert found.step_seconds is not None
        by_step.setdefault(found.step_seconds, set()).add((found.flops, kept, found.host_bytes))
    assert len(by_step) > 100
    assert all(len(inputs) == 1 for inputs in by_step.values())


def test_a_compiled_candidate_ranks_by_its_own_per_op_step(h100: Predictor) -> None:
    candidate = Candidate(h100.predict("names:*=remat", 8))
    assert _speed(candidate)[0] == candidate.prediction.step_seconds
    candidate.compiled_step_s = 0.123
    assert _speed(candidate)[0] == 0.123
