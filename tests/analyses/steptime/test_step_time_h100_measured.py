"""The per-op step model against steps measured on a real H100 (llama-1b, 8 x 2048).

Truth: benchmarks/results/gpu_measured_llama1b_h100.json (plain attention, 5 policies) and
..._blockwise_h100.json (blockwise attention and loss, 2 micro-batches, 3 policies), the fastest
of three traced steps each. The programs are the same configurations compiled deviceless
(fixtures/steptime). The table's one fitted figure, the H100 memory efficiency, was fitted on
the blockwise set only (benchmarks/step_time_h100.py --fit): the plain set is unseen data.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from hloscope.analyses.steptime import step_time
from hloscope.api import as_module
from hloscope.devices import get_device

ROOT = Path(__file__).resolve().parents[3]
MEASURED = {"plain": "gpu_measured_llama1b_h100.json",
            "block": "gpu_measured_llama1b_blockwise_h100.json"}
TIE = 0.03  # measured steps closer than this may come out in either order


def fixture_name(policy: str) -> str:
    if policy == "full":
        return "full"
    return "names-" + policy.removeprefix("names:").replace("=", "").replace(",", "-")


def measured_and_predicted(kind: str) -> list[tuple[str, float, float]]:
    data = json.loads((ROOT / "benchmarks" / "results" / MEASURED[kind]).read_text())
    rows = []
    for row in data["rows"]:
        program = as_module(ROOT / "fixtures" / "steptime" /
                            f"h100_{kind}_{fixture_name(row['policy'])}.hlo.gz")
        timed = step_time(program, get_device("h100"))
        assert timed is not None
        rows.append((row["policy"], min(row["step_times_us"]) / 1e6, timed.seconds))
    return rows


@pytest.mark.parametrize("kind", ["plain", "block"])
def test_every_measured_h100_step_is_predicted_within_15_percent(kind: str) -> None:
    for policy, measured, predicted in measured_and_predicted(kind):
        assert abs(predicted / measured - 1) <= 0.15, (policy, measured, predicted)


def test_the_measured_order_of_the_plain_policies_is_reproduced() -> None:
    rows = measured_and_predicted("plain")
    for a in rows:
        for b in rows:
            if b[1] / a[1] - 1 >= TIE:
                assert a[2] < b[2], (a, b)


def test_offloading_to_the_host_is_charged_its_exposed_pcie_time() -> None:
    offload = as_module(ROOT / "fixtures/steptime/"
                        "h100_plain_names-mlp_gateoffload-mlp_upoffload.hlo.gz")
    timed = step_time(offload, get_device("h100"))
    assert timed is not None and timed.seconds_without_host is not None
    moved = 16 * 2 * 8 * 2048 * 8192 * 2  # two [8, 2048, 8192] bf16 names, 16 layers, one way
    busy = timed.link_busy_seconds
    assert busy["host_out"] == pytest.approx(moved / timed.host_link_bytes_per_second, rel=1e-6)
    assert busy["host_in"] == pytest.approx(moved / timed.host_link_bytes_per_second, rel=1e-6)
    assert timed.seconds - timed.seconds_without_host == pytest.approx(
        sum(timed.exposed_by_link.values()), rel=1e-6)
