"""A scan's FLOPs: its to_apply once per step of the scanned dimension (a closed form of the
hand-built module); under XLA's conventions test_cost_xla compares with XLA's own figure."""
from __future__ import annotations

from cost_cases import CASES

import hloscope
from hloscope.analyses.cost import CostAnalysis, CostOptions


def test_scan_charges_its_combiner_once_per_step() -> None:
    module = hloscope.load(CASES["scan_vector_carry"])
    total = CostAnalysis(module, CostOptions()).total
    assert total.flops == 4 * 2  # 4 steps of an f32[2] add


def test_scan_transcendentals_per_step() -> None:
    module = hloscope.load(CASES["scan"])
    total = CostAnalysis(module, CostOptions()).total
    assert (total.flops, total.transcendentals) == (10 * 3, 10 * 1)
