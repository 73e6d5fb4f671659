"""`--search frontier` on a user's step (examples/flax_step.py, XLA:CPU): its names measured by
compiles, then the search, against the truth of compiling every candidate (2 names x {device,
remat} x 2 batches, 8 compiles through one build cache, so the search's are cache hits).

Truths: the example's closed forms (`hidden` and `activated` are float32 [batch, seq, HIDDEN],
one layer's on the one CPU device; `hidden` is x·W1, 2·WIDTH·HIDDEN FLOPs per token, and
keeping `activated` alone saves no matmul: relu's derivative reads `hidden`, which the backward
then recomputes with W1), and the exhaustive compiles (the winner per batch is the fastest by
the search's own ranking among the candidates whose compiled allocation fits). Measured here:
the device-kept candidates' allocations are within -6.8%..-1.2% of their predictions (XLA:CPU
packs a kept stack below the `full` program's peak a little more tightly than the predictor
adds it)."""
from __future__ import annotations

import json
import statistics

import pytest
from conftest import REPO
from frontier_truth import assert_winners_are_the_exhaustive_ones

pytest.importorskip("flax")

import hloscope  # noqa: E402
from hloscope.analyses.predict.measured import MeasuredBlock  # noqa: E402
from hloscope.analyses.predict.step_model import StepPredictor  # noqa: E402
from hloscope.sweeps.frontier import policy_space  # noqa: E402
from hloscope.sweeps.grid import Grid  # noqa: E402

STEP = f"{REPO / 'examples' / 'flax_step.py'}:make_step"
NAMES = ("hidden", "activated")
CHOICES = ("device", "remat")
BATCHES = (4, 8)
SEQ = 32
LAYERS, WIDTH, HIDDEN = 4, 64, 256  # examples/flax_step.py
F32 = 4


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("step-frontier")
    cache = folder / "cache"
    space = policy_space(NAMES, NAMES, CHOICES)
    everything = hloscope.sweep(step=STEP, policies=space, target="cpu", cache=cache,
                                grid=Grid((SEQ,), BATCHES))
    compiled = {(o.case.point.batch, o.case.variant.name): o.figures.required_bytes
                for o in everything.outcomes if o.figures.status == "ok"}
    assert len(compiled) == len(space) * len(BATCHES)
    capacity = int(statistics.median(b for (batch, _), b in compiled.items()
                                     if batch == BATCHES[-1]))
    result = hloscope.sweep(step=STEP, target="cpu", output=folder / "frontier", cache=cache,
                            grid=Grid((SEQ,), BATCHES), search="frontier", capacity=capacity,
                            choices=CHOICES)
    return {"space": space, "compiled": compiled, "capacity": capacity, "result": result,
            "folder": folder / "frontier"}


@pytest.mark.compile
def test_each_name_is_measured_as_its_closed_form(searched: dict) -> None:
    measured = MeasuredBlock.from_dict(searched["result"].measured)
    assert measured.layers == LAYERS and measured.batch == BATCHES[0]
    assert measured.cost("hidden").bytes_per_token == HIDDEN * F32
    assert measured.cost("activated").bytes_per_token == HIDDEN * F32
    matmul = 2 * WIDTH * HIDDEN
    assert measured.cost("hidden").flops_per_token == pytest.approx(matmul, rel=0.05)
    assert measured.cost("activated").flops_per_token < 0.05 * matmul


@pytest.mark.compile
def test_step_frontier_equals_the_exhaustive_one(searched: dict) -> None:
    result = searched["result"]
    predictor = StepPredictor(tuple(result.baselines),
                              block=MeasuredBlock.from_dict(result.measured))

    def speed(policy: str, batch: int) -> tuple:
        p = predictor.predict(policy, batch)
        return (p.step_seconds or 0.0, p.flops, p.host_bytes, p.device_bytes)

    assert_winners_are_the_exhaustive_ones(result, searched, BATCHES, speed, compared=2)
    assert result.compiles < result.candidates + len(NAMES)


@pytest.mark.compile
def test_step_frontier_predictions_and_json(searched: dict) -> None:
    data = json.loads((searched["folder"] / "frontier.json").read_text())
    assert data["names"] == list(NAMES) and data["measured_names"]["layers"] == LAYERS
    compiled_rows = [r for r in data["rows"] if r["compiled_bytes"] is not None]
    assert compiled_rows
    for row in compiled_rows:  # the same program as the exhaustive compile
        assert row["compiled_bytes"] == searched["compiled"][row["batch"], row["policy"]]
        assert abs(row["prediction_error"]) < 0.10, row
    kept = [r for r in data["rows"] if r["choices"].get("hidden") == "device"]
    for row in kept:
        assert any("× hidden kept" in line for line in row["explain"])
