"""The step-time model: every top-level op of the scheduled program timed, overlap from its order.

    calibration.py  one table per device: efficiencies, fixed costs, host link (with sources)
    ops.py          one compute op's time: matmul unit (tile padding), vector units, HBM (and
                    the GPU's L2 for buffers produced shortly before), a fixed cost
    links.py        collectives by ring algorithm on ICI / NVLink / DCN; host transfers
    schedule.py     the walk: one compute stream, links running beside it, waits at `-done`
    result.py       `StepTime`

`step_time(module, device)` is the entry point; `hloscope.analyses.roofline` keeps the whole-
program bounds beside it for reference. docs/step-estimate.md has the model and its errors.
"""
from __future__ import annotations

from dataclasses import replace

from hloscope.analyses.cost import CostAnalysis
from hloscope.analyses.steptime.calibration import Calibration, Figure, calibration_for
from hloscope.analyses.steptime.links import link_rates
from hloscope.analyses.steptime.ops import op_rates
from hloscope.analyses.steptime.result import StepTime
from hloscope.analyses.steptime.schedule import LinkOf, ScheduleWalk
from hloscope.devices import Device
from hloscope.model.module import HloModule

__all__ = ["HOST_LADDER", "StepTime", "step_time"]

FREE_HOST_LINK = 1e18  # bytes/s: a host link that costs nothing


def step_time(module: HloModule, device: Device, compute_dtype: str = "bfloat16", *,
              torus: tuple[int, ...] | None = None, link_of: LinkOf | None = None,
              host_link_bytes_per_second: float | None = None,
              calibration: Calibration | None = None,
              analysis: CostAnalysis | None = None) -> StepTime | None:
    """The per-op model's step of `module` on `device`; None where the device has no
    calibration (the CPU pseudo-device). `torus` is a TPU slice's chip grid ((16, 16));
    `link_of(computation, instruction)` says ICI or DCN per collective (default ICI);
    `host_link_bytes_per_second` replaces the calibrated host link (sensitivity lines);
    `calibration` replaces the device's table (fits)."""
    calibration = calibration or calibration_for(device)
    if calibration is None:
        return None
    what_if = calibration
    if host_link_bytes_per_second is not None:
        what_if = replace(calibration, host_link=Figure(  # per chip, as the table's figures
            host_link_bytes_per_second * device.devices_per_chip, "what-if",
            "a sensitivity run"))
    analysis = analysis or CostAnalysis(module)
    links = link_rates(device, what_if, torus)
    walk = ScheduleWalk(analysis, op_rates(device, what_if, compute_dtype), links, link_of)
    segment = walk.run()
    exposed: dict[str, dict[str, float]] = {}
    for (phase, link), seconds in segment.exposed.items():
        exposed.setdefault(phase, {})[link] = seconds
    missing = sorted(segment.missing | _missing_rates(device))
    without_host: float | None = None
    curve: tuple[tuple[float, float], ...] = ()
    if host_link_bytes_per_second is None and \
            any(link.startswith("host") for link in segment.link_busy):
        curve = tuple((rate, _seconds_at(module, device, compute_dtype, rate, torus, link_of,
                                         calibration, analysis))
                      for rate in _host_ladder(links.host.value))
        without_host = curve[-1][1]
        curve = curve[:-1]
    return StepTime(
        device=device.name, seconds=segment.seconds, compute_seconds=dict(segment.compute),
        phase_compute_seconds=dict(segment.phase_compute), exposed_seconds=exposed,
        link_busy_seconds=dict(segment.link_busy),
        host_link_bytes_per_second=links.host.value, host_link_source=links.host.source,
        ops=tuple(walk.records), missing=tuple(missing),
        calibration=what_if.to_dict(), seconds_without_host=without_host,
        host_curve=curve)


HOST_LADDER = tuple(2.0**k for k in range(-10, 7))
"""The host links a program that moves data to the host is walked again at, as multiples of
the calibrated one (1/1024 .. 64 x), then at a link of no cost."""


def _host_ladder(calibrated: float) -> list[float]:
    return [calibrated * factor for factor in HOST_LADDER] + [FREE_HOST_LINK]


def _seconds_at(module: HloModule, device: Device, compute_dtype: str, rate: float,
                torus: tuple[int, ...] | None, link_of: LinkOf | None,
                calibration: Calibration, analysis: CostAnalysis) -> float:
    found = step_time(module, device, compute_dtype, torus=torus, link_of=link_of,
                      host_link_bytes_per_second=rate, calibration=calibration,
                      analysis=analysis)
    assert found is not None  # the same calibration answered for the calibrated link
    return found.seconds


def _missing_rates(device: Device) -> set[str]:
    missing = set()
    if device.hbm_bandwidth is None:
        missing.add("HBM bandwidth")
    if device.peak_flops.bf16 is None:
        missing.add("peak FLOP/s")
    return missing
