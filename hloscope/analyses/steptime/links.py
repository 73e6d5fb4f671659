"""Time on the links: collectives by their algorithm, transfers to and from pinned host memory.

A collective of payload P (hloscope's payload: the larger of what one device sends and
receives) over a group of n devices runs as a ring, as NCCL and XLA's TPU collectives do for
large payloads:

    all-gather, reduce-scatter, all-to-all:  (n-1)/n x P on the wire, n-1 ring steps
    all-reduce (reduce-scatter + all-gather): 2(n-1)/n x P,             2(n-1) ring steps
    collective-permute, send/recv:            P,                         1 step

    seconds = fixed cost + steps x hop latency + wire bytes / link bandwidth

The link bandwidth is one device's share, each direction: on an ICI torus a ring along the axes
the group spans uses those axes' links both ways (a group within one axis of a 2-D torus gets a
quarter of the chip's bidirectional figure, one spanning both axes half); NVLink through
NVSwitch gives every group half of the bidirectional figure; the DCN is a NIC's line rate per
chip. Host transfers move their bytes at the host link's rate, each direction on its own (PCIe
is full duplex).
"""
from __future__ import annotations

from dataclasses import dataclass

from hloscope.analyses.steptime.calibration import Calibration, host_link_rate
from hloscope.calibration import Figure
from hloscope.devices import Device

ICI, DCN, HOST_OUT, HOST_IN = "ici", "dcn", "host_out", "host_in"
LINKS = (ICI, DCN, HOST_OUT, HOST_IN)

_RING = {"all-gather": (1, 1), "reduce-scatter": (1, 1), "all-to-all": (1, 1),
         "ragged-all-to-all": (1, 1), "all-reduce": (2, 2)}
"""opcode -> (wire bytes in units of (n-1)/n x payload, ring steps in units of n-1)."""


@dataclass(frozen=True, slots=True)
class LinkRates:
    """One device's links: bytes/s each direction (None: unknown) and fixed costs."""

    ici: float | None
    dcn: float | None
    host: Figure
    torus: tuple[int, ...] | None  # the slice's torus dimensions (TPU); None: a switch
    collective_overhead: float
    hop_latency: float

    @property
    def host_bytes_per_second(self) -> float:
        return self.host.value


def link_rates(device: Device, calibration: Calibration, torus: tuple[int, ...] | None,
               host_override: float | None = None) -> LinkRates:
    """`host_override`: a host link (bytes/s per device each way) in place of the calibrated
    one, for the what-if walks of a sensitivity line."""
    chip_share = 1 / device.devices_per_chip
    ici = None if device.interconnect_bandwidth is None else \
        device.interconnect_bandwidth * chip_share
    dcn = None if device.dcn_bandwidth is None else device.dcn_bandwidth * chip_share
    host = host_link_rate(device, calibration) if host_override is None else \
        Figure(host_override, "what-if", "a sensitivity run")
    return LinkRates(ici, dcn, host,
                     torus if device.backend == "tpu" else None,
                     calibration.collective_overhead.value, calibration.hop_latency.value)


def collective_seconds(rates: LinkRates, opcode: str, payload: int, group_size: int,
                       link: str) -> float | None:
    """One collective's time on `link` (ICI or DCN); None when the link's rate is unknown."""
    bandwidth = _bandwidth(rates, link, group_size)
    if bandwidth is None:
        return None
    base = opcode.removesuffix("-start")
    n = max(1, group_size)
    if n == 1 and base in _RING:
        return rates.collective_overhead
    wire_units, step_units = _RING.get(base, (0, 0))
    if wire_units:
        wire = wire_units * (n - 1) / n * payload
        steps = step_units * (n - 1)
    else:  # permutes, sends, receives, broadcasts: the payload once
        wire, steps = payload, 1
    return rates.collective_overhead + steps * rates.hop_latency + wire / bandwidth


def _bandwidth(rates: LinkRates, link: str, group_size: int) -> float | None:
    if link == DCN:
        return rates.dcn
    if rates.ici is None:
        return None
    if not rates.torus:
        return rates.ici / 2
    return rates.ici * axes_spanned(rates.torus, group_size) / (2 * len(rates.torus))


def axes_spanned(torus: tuple[int, ...], group_size: int) -> int:
    """The fewest torus axes whose sizes multiply to at least `group_size` (largest first)."""
    covered, axes = 1, 0
    for size in sorted((d for d in torus if d > 1), reverse=True):
        if covered >= group_size:
            break
        covered *= size
        axes += 1
    return max(1, axes)


def host_seconds(rates: LinkRates, moved: int) -> float:
    return moved / rates.host_bytes_per_second if moved else 0.0
