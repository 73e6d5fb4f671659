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

from hloscope.analyses.cost import CostAnalysis
from hloscope.analyses.steptime.calibration import Calibration, calibration_for
from hloscope.analyses.steptime.links import link_rates
from hloscope.analyses.steptime.ops import op_rates
from hloscope.analyses.steptime.result import StepTime
from hloscope.analyses.steptime.schedule import LinkOf, OpMemo, ScheduleWalk, Segment
from hloscope.devices import Device
from hloscope.model.module import HloModule

__all__ = ["HOST_LADDER", "StepTime", "step_time"]

FREE_HOST_LINK = 1e18  # bytes/s: a host link that costs nothing


def step_time(module: HloModule, device: Device, compute_dtype: str = "bfloat16", *,
              torus: tuple[int, ...] | None = None, link_of: LinkOf | None = None,
              calibration: Calibration | None = None,
              analysis: CostAnalysis | None = None) -> StepTime | None:
    """The per-op model's step of `module` on `device`; None where the device has no
    calibration (the CPU pseudo-device). `torus` is a TPU slice's chip grid ((16, 16));
    `link_of(computation, instruction)` says ICI or DCN per collective (default ICI);
    `calibration` replaces the device's table (fits). A program that moves data to the host is
    walked again at `HOST_LADDER`'s links (`StepTime.host_curve`), its ops timed once."""
    calibration = calibration or calibration_for(device)
    if calibration is None:
        return None
    analysis = analysis or CostAnalysis(module)
    ops = op_rates(device, calibration, compute_dtype)
    memo: OpMemo = {}

    def walk_at(host: float | None) -> tuple[ScheduleWalk, Segment]:
        walk = ScheduleWalk(analysis, ops, link_rates(device, calibration, torus, host), link_of,
                            memo)
        return walk, walk.run()

    walk, segment = walk_at(None)
    exposed: dict[str, dict[str, float]] = {}
    for (phase, link), seconds in segment.exposed.items():
        exposed.setdefault(phase, {})[link] = seconds
    without_host: float | None = None
    curve: tuple[tuple[float, float], ...] = ()
    if any(link.startswith("host") for link in segment.link_busy):
        curve = tuple((rate, walk_at(rate)[1].seconds)
                      for rate in _host_ladder(walk.links.host.value))
        without_host = curve[-1][1]
        curve = curve[:-1]
    links = walk.links
    return StepTime(
        device=device.name, seconds=segment.seconds, compute_seconds=dict(segment.compute),
        phase_compute_seconds=dict(segment.phase_compute), exposed_seconds=exposed,
        link_busy_seconds=dict(segment.link_busy),
        host_link_bytes_per_second=links.host.value, host_link_source=links.host.source,
        ops=tuple(walk.records), missing=tuple(sorted(segment.missing | _missing_rates(device))),
        calibration=calibration.to_dict(), seconds_without_host=without_host,
        host_curve=curve)


HOST_LADDER = tuple(2.0**k for k in range(-10, 7))
"""The host links a program that moves data to the host is walked again at, as multiples of
the calibrated one (1/1024 .. 64 x), then at a link of no cost."""


def _host_ladder(calibrated: float) -> list[float]:
    return [calibrated * factor for factor in HOST_LADDER] + [FREE_HOST_LINK]


def _missing_rates(device: Device) -> set[str]:
    missing = set()
    if device.hbm_bandwidth is None:
        missing.add("HBM bandwidth")
    if device.peak_flops.bf16 is None:
        missing.add("peak FLOP/s")
    return missing
