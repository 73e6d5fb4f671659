"""The step-time model's calibration: one table per device, assembled from the figures of
`hloscope.calibration` (each with its source and the test that checks it).

The device facts themselves (peaks, bandwidths, link rates, caches) stay in `hloscope.devices`;
this table holds what the model needs beyond them. `docs/step-estimate.md` lists the table and
the measured errors.
"""
from __future__ import annotations

from dataclasses import dataclass

from hloscope.calibration import DATASHEET, DEFAULT, MEASURED, UNCHECKED, Figure, cpu, gpu, tpu
from hloscope.devices import Device, get_device

__all__ = ["CALIBRATIONS", "PCIE_PAYLOAD_EFFICIENCY", "Calibration", "calibration_for",
           "host_link_rate",
           "measured_cpu"]

H100_RESULTS = gpu.H100_RESULTS
PCIE_PAYLOAD_EFFICIENCY = gpu.PCIE_PAYLOAD_EFFICIENCY
_NO_OVERLAP = Figure(0.0, DEFAULT, "stated default: host transfers exposed whole")


@dataclass(frozen=True)
class Calibration:
    """What the per-op model needs of one device beyond `hloscope.devices.Device`."""

    device: str
    matmul_efficiency: Figure  # fraction of the peak a large, tile-aligned matmul reaches
    memory_efficiency: Figure  # fraction of the HBM bandwidth a streaming op reaches
    matmul_tile: tuple[int, int, int]  # (rows, columns, contraction) a matmul is padded to
    matmul_tile_source: str
    op_overhead: Figure  # seconds of fixed cost per launched op
    collective_overhead: Figure  # seconds of fixed cost per collective, plus per hop below
    hop_latency: Figure  # seconds per ring step of a collective
    host_link: Figure  # bytes/s per device, each direction, device <-> pinned host memory
    # what of a phase's compute a predicted (uncompiled) program's host transfers hide behind
    host_overlap: Figure = _NO_OVERLAP
    cache_bytes: int | None = None  # a cache that holds a producer's output for its consumer
    cache_speedup: Figure | None = None  # its read bandwidth over HBM's

    def figures(self) -> dict[str, Figure]:
        named = {"matmul_efficiency": self.matmul_efficiency,
                 "memory_efficiency": self.memory_efficiency, "op_overhead": self.op_overhead,
                 "collective_overhead": self.collective_overhead,
                 "hop_latency": self.hop_latency, "host_link": self.host_link,
                 "host_overlap": self.host_overlap}
        if self.cache_speedup is not None:
            named["cache_speedup"] = self.cache_speedup
        return named

    def to_dict(self) -> dict[str, object]:
        return {"device": self.device, "matmul_tile": list(self.matmul_tile),
                "matmul_tile_source": self.matmul_tile_source, "cache_bytes": self.cache_bytes,
                **{name: figure.to_dict() for name, figure in self.figures().items()}}


def _gpu(name: str, matmul: Figure, memory: Figure, host_source: str,
         tile: tuple[tuple[int, int, int], str]) -> Calibration:
    device = get_device(name)
    assert device.host_link_bandwidth is not None and device.cuda is not None
    host_per_direction = device.host_link_bandwidth / 2
    return Calibration(
        device=name, matmul_efficiency=matmul, memory_efficiency=memory, matmul_tile=tile[0],
        matmul_tile_source=tile[1], op_overhead=gpu.KERNEL_LAUNCH,
        collective_overhead=gpu.NCCL_LAUNCH, hop_latency=gpu.NVLINK_HOP,
        host_link=Figure(host_per_direction * PCIE_PAYLOAD_EFFICIENCY, DATASHEET,
                         f"{host_source}, halved, times the PCIe payload efficiency "
                         f"{PCIE_PAYLOAD_EFFICIENCY:.3f} (128b/130b encoding, 256-byte TLPs)",
                         gpu.H100_CHECK if name == "h100" else UNCHECKED),
        host_overlap=gpu.HOST_OVERLAP, cache_bytes=device.cuda.l2_cache_size,
        cache_speedup=gpu.L2_SPEEDUP)


def _tpu(name: str, tile: tuple[tuple[int, int, int], str]) -> Calibration:
    return Calibration(
        device=name, matmul_efficiency=tpu.MATMUL_EFFICIENCY,
        memory_efficiency=tpu.MEMORY_EFFICIENCY, matmul_tile=tile[0],
        matmul_tile_source=tile[1], op_overhead=tpu.OP_OVERHEAD,
        collective_overhead=tpu.OP_OVERHEAD, hop_latency=tpu.HOP_LATENCY,
        host_link=tpu.HOST_LINK, host_overlap=tpu.HOST_OVERLAP)


CALIBRATIONS: dict[str, Calibration] = {
    "h100": _gpu("h100", gpu.H100_MATMUL, gpu.H100_MEMORY, gpu.H100_HOST_LINK, gpu.H100_TILE),
    "a100": _gpu("a100", gpu.A100_MATMUL, gpu.A100_MEMORY, gpu.A100_HOST_LINK, gpu.A100_TILE),
    "v2": _tpu("v2", tpu.MXU_128), "v3": _tpu("v3", tpu.MXU_128), "v4": _tpu("v4", tpu.MXU_128),
    "v5e": _tpu("v5e", tpu.MXU_128), "v5p": _tpu("v5p", tpu.MXU_128),
    "v6e": _tpu("v6e", tpu.MXU_256), "tpu7x": _tpu("tpu7x", tpu.MXU_TPU7X),
}


def calibration_for(device: Device) -> Calibration | None:
    """The device's table, or None (the CPU pseudo-device: nothing to calibrate against)."""
    return CALIBRATIONS.get(device.name)


def host_link_rate(device: Device, calibration: Calibration) -> Figure:
    """Bytes/s each way between one device and pinned host memory: the calibration's figure
    (per chip) shared by the chip's devices."""
    return Figure(calibration.host_link.value / device.devices_per_chip,
                  calibration.host_link.kind, calibration.host_link.source,
                  calibration.host_link.checked_by)


def measured_cpu(bf16_flops: float, f32_flops: float, bytes_per_second: float,
                 op_seconds: float, source: str) -> tuple[Device, Calibration]:
    """The CPU pseudo-device with rates measured on this machine (`workloads.cpu_probe`), and
    its calibration: the measured rates are what ops reach, so every efficiency is 1."""
    from dataclasses import replace

    from hloscope.devices import PeakFlops

    device = replace(get_device("cpu"), peak_flops=PeakFlops(bf16=bf16_flops, f32=f32_flops),
                     hbm_bandwidth=bytes_per_second)
    whole = cpu.reached(source)
    return device, Calibration(
        device="cpu", matmul_efficiency=whole, memory_efficiency=whole,
        matmul_tile=cpu.MATMUL_TILE[0], matmul_tile_source=cpu.MATMUL_TILE[1],
        op_overhead=Figure(op_seconds, MEASURED, source),
        collective_overhead=cpu.NO_COLLECTIVES, hop_latency=cpu.NO_COLLECTIVES,
        host_link=cpu.NO_HOST_LINK)
