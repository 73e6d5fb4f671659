"""The frontier benchmarks' compiles with libtpu's log of them (fixtures/predict/
llama-v5e-squeezed.json, made by fixtures/make_squeeze_fixture.py: llama-1b / v5e:2x2 and
llama-8b / v5e:4x4, seq 2048), and predictors from their `full` baselines."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from hloscope.analyses.predict.baseline import Baseline
from hloscope.analyses.predict.model import Predictor

FIXTURE = Path(__file__).parent.parent / "fixtures" / "predict" / "llama-v5e-squeezed.json"
RECORD = json.loads(FIXTURE.read_text())


def baselines(model: str, spans: bool = True) -> tuple[Baseline, ...]:
    """`model`'s baselines; without `spans`, as if their layer spans were not measured."""
    found = tuple(Baseline.from_dict(b) for b in RECORD[model]["baselines"])
    if spans:
        return found
    return tuple(dataclasses.replace(b, layer_span_peak_bytes=0) for b in found)


def predictor(model: str, spans: bool = True) -> Predictor:
    return Predictor(baselines(model, spans))
