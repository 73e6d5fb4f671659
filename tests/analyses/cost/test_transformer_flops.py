"""The fixture transformer's FLOPs against closed forms, and against XLA's cost_analysis() of the
compile that produced each fixture (recorded in its meta.json).

Per layer of the fixture's GPT block (hloscope/workloads/transformer.py: QKV and output
projections, causal attention computed in full, a d_ff GELU MLP), for T = b*s tokens per device,
the forward matmuls cost 2T(4h^2 + 2hf) and attention 2*2*b*s^2*h (scores and values); the
logits cost 2Thv (the tied unembedding). The backward does two matmuls per forward matmul.

Under full remat JAX replays only what the backward reads: the QKV and output projections, both
attention matmuls and the MLP's first matmul (its pre-activation feeds GELU's derivative, and the
output projection's result feeds the second LayerNorm); the MLP's second matmul produces the
block's output, which no derivative reads. So recompute = 2T(4h^2 + hf) + 4bs^2h per layer:
(16h^2 + 4sh)/(24h^2 + 4sh) of a block's forward per token when f = 4h.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from conftest import FIXTURES

import hloscope
from hloscope.analyses.cost import CostOptions
from hloscope.analyses.cost.flops import cost_analysis, costed_charges, flops
from hloscope.analyses.cost.phases import Phase
from hloscope.configs.targets import parse_target

MATMULS = ("dot", "convolution")
FIXTURE_DIRS = sorted(p.parent for p in FIXTURES.glob("*/*/meta.json"))


@dataclass(frozen=True)
class Shapes:
    h: int
    f: int
    layers: int
    vocab: int
    seq: int
    batch: int  # per device

    @property
    def tokens(self) -> int:
        return self.batch * self.seq

    def forward_layer(self) -> int:
        return 2 * self.tokens * (4 * self.h**2 + 2 * self.h * self.f) + self.attention()

    def attention(self) -> int:
        return 4 * self.batch * self.seq**2 * self.h

    def forward(self) -> int:
        return self.layers * self.forward_layer() + 2 * self.tokens * self.h * self.vocab

    def recompute(self) -> int:
        per_layer = 2 * self.tokens * (4 * self.h**2 + self.h * self.f) + self.attention()
        return self.layers * per_layer


def meta(folder: Path) -> dict:
    return json.loads((folder / "meta.json").read_text())


def shapes(folder: Path) -> Shapes:
    info = meta(folder)
    config = info["config"]
    devices = parse_target(info["target"]).num_devices
    return Shapes(config["d_model"], config["d_ff"], config["n_layers"], config["vocab"],
                  config["seq_len"], config["batch"] // devices)


@cache
def charged_matmuls(folder: Path) -> list:
    return [c for c in costed_charges(cost_analysis(hloscope.load(folder)))
            if c.opcode in MATMULS]


def matmul_flops(folder: Path, phase: Phase | None = None) -> int:
    return sum(c.cost.flops for c in charged_matmuls(folder)
               if phase is None or c.phase is phase)


def fixture_ids(folder: Path) -> str:
    return str(folder.relative_to(FIXTURES))


def test_fixtures_exist() -> None:
    assert FIXTURE_DIRS, f"no fixtures with meta.json under {FIXTURES}"


@pytest.mark.parametrize("folder", FIXTURE_DIRS, ids=fixture_ids)
def test_forward_matmul_flops_match_the_closed_form(folder: Path) -> None:
    assert matmul_flops(folder, Phase.FORWARD) == pytest.approx(shapes(folder).forward(),
                                                                rel=0.05)


@pytest.mark.parametrize("folder", [f for f in FIXTURE_DIRS if meta(f)["config"]["remat"]
                                    == "none"], ids=fixture_ids)
def test_no_remat_step_is_three_forwards(folder: Path) -> None:
    forward = matmul_flops(folder, Phase.FORWARD)
    assert matmul_flops(folder) == pytest.approx(3 * forward, rel=0.05)


@pytest.mark.parametrize("folder", [f for f in FIXTURE_DIRS if meta(f)["config"]["remat"]
                                    == "full"], ids=fixture_ids)
def test_full_remat_recomputes_what_the_backward_reads(folder: Path) -> None:
    assert matmul_flops(folder, Phase.RECOMPUTE) == pytest.approx(shapes(folder).recompute(),
                                                                  rel=0.05)


@pytest.mark.parametrize("folder", [f for f in FIXTURE_DIRS if meta(f).get("cost")],
                         ids=fixture_ids)
def test_totals_match_the_compiles_cost_analysis(folder: Path) -> None:
    """The same XLA program, costed by the compile itself (TPU's cost model counts bytes its
    own way, so only FLOPs are compared there)."""
    recorded = meta(folder)["cost"]
    total = flops(hloscope.load(folder), options=CostOptions.like_xla()).total
    assert total.flops == pytest.approx(recorded["flops"], rel=0.01)
    assert total.transcendentals == pytest.approx(recorded["transcendentals"], rel=0.01)
    if meta(folder)["target_name"] == "cpu":
        assert total.bytes_accessed == pytest.approx(recorded["bytes_accessed"], rel=0.01)


def test_scanned_layers_do_the_unrolled_matmuls() -> None:
    """Multiplied by its trip count, the scan's loop body does the unrolled program's matmuls."""
    scanned, unrolled = FIXTURES / "cpu" / "scan-remat-none", FIXTURES / "cpu" / "remat-none"
    if not (scanned / "meta.json").exists():
        pytest.skip("no scanned CPU fixture")
    assert matmul_flops(scanned) == matmul_flops(unrolled)
    layers = flops(hloscope.load(scanned)).rows("layer")
    # the layer loop is unrolled in the report: one row per layer of the model
    count = shapes(scanned).layers
    assert [row.key for row in layers[:count]] == [f"layer_{i}" for i in range(count)]
    assert not any(row.iterations > 1 for row in layers)
