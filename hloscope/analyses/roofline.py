"""A roofline estimate of one train step on one device, from the device facts in hloscope.devices.

SPMD modules describe one device already, so every figure is per device. Five terms, each the
bytes (or FLOPs) of the compiled program over one device figure:

    compute = FLOPs / peak FLOP/s              memory = HBM bytes / HBM bandwidth
    ici     = ICI collective bytes / ICI       dcn    = DCN collective bytes / DCN
              (the in-slice interconnect: ICI on TPU, NVLink on GPU)
    host    = max(to-host, from-host bytes) / host link

and two bounds built from them:

    serial_seconds     = max(compute, memory) + ici + dcn + host      (nothing overlaps)
    overlapped_seconds = max(compute, memory, ici, dcn, host)         (everything overlaps)

The serial bound is the pessimistic one (every transfer waits for compute and for each other),
the overlapped bound the optimistic one (each link runs concurrently with compute and with the
other links, as XLA's asynchronous collectives and host copies allow at best). Neither counts
launch overheads, pipeline bubbles or collective algorithms (a payload crosses its link once).
`dominant` names the largest term.

Link figures: ICI (`interconnect_bandwidth`) is per chip and bidirectional, so a device gets half
of its chip's share in each direction; DCN (`dcn_bandwidth`) is per chip and each direction
already (a NIC line rate); the host link (PCIe) is bidirectional and transfers to and from the
host run concurrently (the larger direction counts). Which collectives cross slices comes from
`hloscope.analyses.cost.collectives` (ICI and DCN bytes); when that split is unknown every
collective counts as ICI, and on a multislice target that makes the estimate a lower bound.

Recomputation is in the FLOPs and bytes (they are the compiled program's). A term whose device
figure is unknown (None) is left out and named in `missing`, so both bounds are then lower
bounds. `seconds` is the serial bound (the figure this module has always given);
`collective_seconds` is ici + dcn and `offload_seconds` the host term.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from hloscope.devices import Device

COMPUTE, MEMORY, ICI, DCN, HOST = "compute", "memory", "ici", "dcn", "host"
SERIAL, OVERLAPPED = "serial", "overlapped"


@dataclass(frozen=True, slots=True)
class StepEstimate:
    compute_seconds: float | None
    memory_seconds: float | None
    collective_seconds: float | None  # ici + dcn (the known ones)
    offload_seconds: float | None  # the host-link term
    missing: tuple[str, ...] = field(default_factory=tuple)
    ici_seconds: float | None = None
    dcn_seconds: float | None = None

    @property
    def seconds(self) -> float | None:
        """The serial bound (kept under its original name)."""
        return self.serial_seconds

    @property
    def serial_seconds(self) -> float | None:
        """Pessimistic: max(compute, memory) + every link's time; None without compute and
        memory times."""
        roof = self._roof()
        if roof is None:
            return None
        return roof + sum(t for t in self._links().values() if t is not None)

    @property
    def overlapped_seconds(self) -> float | None:
        """Optimistic: the largest of compute, memory and each link's time."""
        roof = self._roof()
        if roof is None:
            return None
        return max([roof, *(t for t in self._links().values() if t is not None)])

    @property
    def bound(self) -> str | None:
        """Which roof limits the computation: "compute" or "memory"."""
        if self.compute_seconds is None or self.memory_seconds is None:
            return None
        return COMPUTE if self.compute_seconds >= self.memory_seconds else MEMORY

    @property
    def dominant(self) -> str | None:
        """The largest term: compute, memory, ici, dcn or host (None when none is known)."""
        terms = {COMPUTE: self.compute_seconds, MEMORY: self.memory_seconds, **self._links()}
        known = {name: t for name, t in terms.items() if t is not None}
        return max(known, key=lambda name: known[name]) if known else None

    @property
    def is_lower_bound(self) -> bool:
        return bool(self.missing)

    def _roof(self) -> float | None:
        bound = [t for t in (self.compute_seconds, self.memory_seconds) if t is not None]
        return max(bound) if bound else None

    def _links(self) -> dict[str, float | None]:
        """Each link's time; an estimate built without the ICI/DCN split has one collective
        term, reported as ICI."""
        split = self.ici_seconds is not None or self.dcn_seconds is not None
        collectives = {ICI: self.ici_seconds, DCN: self.dcn_seconds} if split else \
            {ICI: self.collective_seconds}
        return {**collectives, HOST: self.offload_seconds}

    def to_dict(self) -> dict:
        return {**asdict(self), "missing": list(self.missing), "seconds": self.seconds,
                "serial_seconds": self.serial_seconds,
                "overlapped_seconds": self.overlapped_seconds, "bound": self.bound,
                "dominant": self.dominant}


def peak_flops(device: Device, compute_dtype: str) -> float | None:
    peaks = device.peak_flops
    if compute_dtype == "float32":
        return peaks.f32
    return peaks.bf16  # bf16; fp16 runs at the bf16 rate where both exist


def estimate_step(device: Device, compute_dtype: str, flops: float, hbm_bytes: float,
                  collective_bytes: float, to_host_bytes: float = 0,
                  from_host_bytes: float = 0, *, ici_bytes: float | None = None,
                  dcn_bytes: float | None = None, unknown_link_bytes: float = 0,
                  num_slices: int = 1) -> StepEstimate:
    """The roofline estimate of one step of a per-device program.

    `ici_bytes` and `dcn_bytes` are the collective payload by link (None when the split is not
    known: then `collective_bytes` all count as ICI); `unknown_link_bytes` are collectives whose
    link could not be told, counted as ICI (the faster link, so a lower bound)."""
    missing: list[str] = []
    compute = _time(flops, peak_flops(device, compute_dtype), f"{compute_dtype} peak FLOP/s",
                    missing)
    memory = _time(hbm_bytes, device.hbm_bandwidth, "HBM bandwidth", missing)
    ici_amount, dcn_amount = _by_link(collective_bytes, ici_bytes, dcn_bytes,
                                      unknown_link_bytes, num_slices, missing)
    ici = _time(ici_amount, _ici_rate(device), "interconnect bandwidth", missing)
    dcn = _time(dcn_amount, _dcn_rate(device), "DCN bandwidth", missing)
    host = _time(max(to_host_bytes, from_host_bytes), _host_rate(device),
                 "host-link bandwidth", missing)
    known = [t for t in (ici, dcn) if t is not None]
    collectives = sum(known) if known else None
    return StepEstimate(compute, memory, collectives, host, tuple(missing), ici, dcn)


def _by_link(total: float, ici: float | None, dcn: float | None, unknown: float,
             num_slices: int, missing: list[str]) -> tuple[float, float]:
    """(ICI bytes, DCN bytes); what cannot be placed counts as ICI and is named in `missing`
    where it could have crossed slices."""
    if ici is None and dcn is None:
        if total and num_slices > 1:
            missing.append("which collectives cross slices (all counted as ICI)")
        return total, 0
    if unknown:
        missing.append("the link of some collectives (counted as ICI)")
    return (ici or 0) + unknown, dcn or 0


def _ici_rate(device: Device) -> float | None:
    """One direction of one device's share: the chip's bidirectional figure halved."""
    if device.interconnect_bandwidth is None:
        return None
    return device.interconnect_bandwidth / 2 / device.devices_per_chip


def _dcn_rate(device: Device) -> float | None:
    """One device's share of its chip's DCN figure (already per direction)."""
    if device.dcn_bandwidth is None:
        return None
    return device.dcn_bandwidth / device.devices_per_chip


def _host_rate(device: Device) -> float | None:
    if device.host_link_bandwidth is None:
        return None
    return device.host_link_bandwidth / 2 / device.devices_per_chip


def _time(amount: float, rate: float | None, what: str, missing: list[str]) -> float | None:
    if not amount:
        return 0.0
    if rate is None:
        missing.append(what)
        return None
    return amount / rate
