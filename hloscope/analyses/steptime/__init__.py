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

__all__ = ["StepTime", "step_time"]

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
    if host_link_bytes_per_second is not None:
        calibration = replace(calibration, host_link=Figure(
            host_link_bytes_per_second, "what-if", "a sensitivity run"))
    analysis = analysis or CostAnalysis(module)
    links = link_rates(device, calibration, torus)
    walk = ScheduleWalk(analysis, op_rates(device, calibration, compute_dtype), links, link_of)
    segment = walk.run()
    exposed: dict[str, dict[str, float]] = {}
    for (phase, link), seconds in segment.exposed.items():
        exposed.setdefault(phase, {})[link] = seconds
    missing = sorted(segment.missing | _missing_rates(device))
    without_host = None
    if any(link.startswith("host") for link in segment.link_busy) and \
            host_link_bytes_per_second != FREE_HOST_LINK:
        free = step_time(module, device, compute_dtype, torus=torus, link_of=link_of,
                         host_link_bytes_per_second=FREE_HOST_LINK, calibration=calibration,
                         analysis=analysis)
        without_host = None if free is None else free.seconds
    return StepTime(
        device=device.name, seconds=segment.seconds, compute_seconds=dict(segment.compute),
        phase_compute_seconds=dict(segment.phase_compute), exposed_seconds=exposed,
        link_busy_seconds=dict(segment.link_busy),
        host_link_bytes_per_second=links.host.value, host_link_source=links.host.source,
        ops=tuple(walk.records), missing=tuple(missing),
        calibration=calibration.to_dict(), seconds_without_host=without_host)


def _missing_rates(device: Device) -> set[str]:
    missing = set()
    if device.hbm_bandwidth is None:
        missing.add("HBM bandwidth")
    if device.peak_flops.bf16 is None:
        missing.add("peak FLOP/s")
    return missing
