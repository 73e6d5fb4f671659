"""A roofline estimate of one train step on one device, from the device facts in hloscope.devices.

SPMD modules describe one device already, so every figure is per device:

    step = max(FLOPs / peak FLOP/s, HBM bytes / HBM bandwidth)
           + collective bytes / link bandwidth + host-offload bytes / host-link bandwidth

Recomputation is in the FLOPs and bytes (they are the compiled program's). Link figures in
`devices.py` are per chip and bidirectional; a device is taken to use half of its chip's share in
each direction, and transfers to and from the host run concurrently (the larger direction
counts). Nothing overlaps compute with communication, so this is a pessimistic model for
well-overlapped programs and an optimistic one for everything that is not bandwidth (launch
overheads, pipeline bubbles). A term whose device figure is unknown (None) is left out and
named in `missing`, so the estimate is then a lower bound.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from hloscope.devices import Device


@dataclass(frozen=True, slots=True)
class StepEstimate:
    compute_seconds: float | None
    memory_seconds: float | None
    collective_seconds: float | None
    offload_seconds: float | None
    missing: tuple[str, ...] = field(default_factory=tuple)

    @property
    def seconds(self) -> float | None:
        """The estimate; None when neither compute nor memory time is known."""
        bound = [t for t in (self.compute_seconds, self.memory_seconds) if t is not None]
        if not bound:
            return None
        extra = [t for t in (self.collective_seconds, self.offload_seconds) if t is not None]
        return max(bound) + sum(extra)

    @property
    def bound(self) -> str | None:
        """Which roof limits the step: "compute" or "memory"."""
        if self.compute_seconds is None or self.memory_seconds is None:
            return None
        return "compute" if self.compute_seconds >= self.memory_seconds else "memory"

    @property
    def is_lower_bound(self) -> bool:
        return bool(self.missing)

    def to_dict(self) -> dict:
        return {**asdict(self), "missing": list(self.missing), "seconds": self.seconds,
                "bound": self.bound}


def peak_flops(device: Device, compute_dtype: str) -> float | None:
    peaks = device.peak_flops
    if compute_dtype == "float32":
        return peaks.f32
    return peaks.bf16  # bf16; fp16 runs at the bf16 rate where both exist


def estimate_step(device: Device, compute_dtype: str, flops: float, hbm_bytes: float,
                  collective_bytes: float, to_host_bytes: float = 0,
                  from_host_bytes: float = 0) -> StepEstimate:
    """The roofline estimate of one step of a per-device program."""
    missing: list[str] = []
    compute = _time(flops, peak_flops(device, compute_dtype), f"{compute_dtype} peak FLOP/s",
                    missing)
    memory = _time(hbm_bytes, device.hbm_bandwidth, "HBM bandwidth", missing)
    link = _per_device_direction(device, device.interconnect_bandwidth)
    collectives = _time(collective_bytes, link, "interconnect bandwidth", missing)
    host = _per_device_direction(device, device.host_link_bandwidth)
    offload = _time(max(to_host_bytes, from_host_bytes), host, "host-link bandwidth", missing)
    return StepEstimate(compute, memory, collectives, offload, tuple(missing))


def _per_device_direction(device: Device, chip_bidirectional: float | None) -> float | None:
    if chip_bidirectional is None:
        return None
    return chip_bidirectional / 2 / device.devices_per_chip


def _time(amount: float, rate: float | None, what: str, missing: list[str]) -> float | None:
    if not amount:
        return 0.0
    if rate is None:
        missing.append(what)
        return None
    return amount / rate
