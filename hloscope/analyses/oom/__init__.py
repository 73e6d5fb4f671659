"""Why a config runs out of memory, and what would make it fit (`hloscope oom`).

`diagnose(oom_inputs(program), capacity)` returns an `OomDiagnosis`: the verdict on XLA's
allocation (or the live peak, labelled an estimate), the live set at the peak by category and
by layer group, where the peak happens, sharding findings, remedies with predicted peaks and
extra FLOPs (`remedies.py`), and the closed-form view of the built-in model (`analytic.py`).
Modules: capacity, categories, groups, sharding, analytic, remedies, compiled (sweep facts),
inputs, diagnosis. Importing this package never imports jax.
"""
from __future__ import annotations

from hloscope.analyses.oom.capacity import Capacity, resolve_capacity
from hloscope.analyses.oom.diagnosis import OomDiagnosis, diagnose
from hloscope.analyses.oom.inputs import OomInputs, oom_inputs

__all__ = ["Capacity", "OomDiagnosis", "OomInputs", "diagnose", "oom_inputs",
           "resolve_capacity"]
