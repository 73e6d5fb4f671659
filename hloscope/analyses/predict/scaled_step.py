"""A predicted (uncompiled) program's step, from its `full` baseline's per-op step.

The baseline's step (`analyses.steptime`, walked over its compiled schedule) splits into the
compute stream and the waits on links. A candidate at another batch, keeping other names:

    compute   = baseline compute x (step tokens / baseline tokens)
              + (predicted FLOPs - scaled baseline FLOPs) at the matmul unit's calibrated rate
              + STACK_HBM_PASSES x bytes kept (on the device or offloaded) at HBM's rate
    waits     = the baseline's link waits (weights' collectives: they do not scale with tokens)
    host      = per direction, bytes offloaded over the host link, less what hides behind the
                phase's compute (forward for the writes, backward for the fetches) by the
                device's `host_overlap`
    step      = compute + waits + host

Names kept differ in FLOPs saved and bytes moved, so two candidates tie only when both are
equal. The search compiles its winner and ranks it by its own per-op step from then on
(`sweeps.frontier`); this figure only orders what is not compiled yet.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from hloscope.analyses.steptime import StepTime
from hloscope.analyses.steptime.calibration import calibration_for, host_link_rate
from hloscope.analyses.steptime.ops import op_rates
from hloscope.devices import Device

STACK_HBM_PASSES = 2
"""HBM passes over a kept name's bytes beyond recomputing it: the forward writes its stack, the
backward reads it (an offloaded name: the transfers' read and write of its device copy)."""

BACKWARD_PHASES = ("backward", "recompute")


@dataclass(frozen=True)
class BaselineStep:
    """What of a baseline's per-op step a prediction scales."""

    seconds: float
    exposed_seconds: float  # the compute stream's waits on links
    forward_seconds: float  # compute-stream time in the forward phase
    backward_seconds: float  # in the backward and recompute phases

    @property
    def compute_seconds(self) -> float:
        return self.seconds - self.exposed_seconds


def baseline_step(timed: StepTime) -> BaselineStep:
    phases = timed.phase_compute_seconds
    return BaselineStep(timed.seconds, sum(timed.exposed_by_link.values()),
                        phases.get("forward", 0.0),
                        sum(phases.get(phase, 0.0) for phase in BACKWARD_PHASES))


@dataclass(frozen=True)
class StepChange:
    """How a candidate differs from its baseline, per device."""

    token_scale: float  # the candidate's tokens over the baseline's
    extra_flops: float  # predicted FLOPs less the baseline's scaled (negative: recompute saved)
    kept_bytes: float  # names kept on the device or offloaded, every layer, every micro-batch
    offloaded_bytes: float  # of those, offloaded (each way)


@dataclass(frozen=True)
class PredictedStep:
    """A candidate's predicted step and its parts, per device."""

    seconds: float
    compute_seconds: float
    link_wait_seconds: float  # the baseline's waits on collectives, unscaled
    host_exposed_seconds: float  # host transfers not hidden behind compute

    @property
    def exposed_seconds(self) -> float:
        return self.link_wait_seconds + self.host_exposed_seconds

    @property
    def dominant(self) -> str:
        parts = {"compute": self.compute_seconds, "exposed collectives": self.link_wait_seconds,
                 "exposed host transfers": self.host_exposed_seconds}
        return max(parts, key=lambda part: parts[part])

    def to_dict(self) -> dict[str, float | str]:
        return {"seconds": self.seconds, "compute_seconds": self.compute_seconds,
                "link_wait_seconds": self.link_wait_seconds,
                "host_exposed_seconds": self.host_exposed_seconds, "dominant": self.dominant}


@dataclass(frozen=True)
class _Rates:
    matmul_flops: float  # FLOP/s
    memory_bytes: float  # bytes/s of HBM
    host_link: float  # bytes/s each way
    host_overlap: float


@functools.cache
def _rates(device: Device, compute_dtype: str) -> _Rates | None:
    """The calibrated rates a prediction uses, resolved once per device (the search predicts
    every candidate at every batch)."""
    calibration = calibration_for(device)
    if calibration is None:
        return None
    rates = op_rates(device, calibration, compute_dtype)
    if rates.matmul_flops is None or rates.memory_bytes is None:
        return None
    return _Rates(rates.matmul_flops, rates.memory_bytes,
                  host_link_rate(device, calibration).value, calibration.host_overlap.value)


def predicted_step(base: BaselineStep, device: Device, compute_dtype: str,
                   change: StepChange) -> PredictedStep | None:
    """The candidate's step (module docstring); None where the device has no calibration."""
    rates = _rates(device, compute_dtype)
    if rates is None:
        return None
    compute = max(0.0, base.compute_seconds * change.token_scale
                  + change.extra_flops / rates.matmul_flops
                  + STACK_HBM_PASSES * change.kept_bytes / rates.memory_bytes)
    host = 0.0
    if change.offloaded_bytes:
        busy = change.offloaded_bytes / rates.host_link
        hidden = rates.host_overlap * change.token_scale
        host = (max(0.0, busy - hidden * base.forward_seconds)
                + max(0.0, busy - hidden * base.backward_seconds))
    return PredictedStep(compute + base.exposed_seconds + host, compute, base.exposed_seconds,
                         host)
