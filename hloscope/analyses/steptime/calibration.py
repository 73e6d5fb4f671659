"""The step-time model's calibration: one table per device, every figure with its source.

A `Figure` is a number, where it comes from (a datasheet, XLA's own cost model, a fit with the
data it was fitted on, or a stated default where nothing is published) and what checks it (a
committed result on data it was not fitted on, or "unchecked"). The device facts themselves
(peaks, bandwidths, link rates, caches) stay in `hloscope.devices`; this table holds what the
model needs beyond them. `docs/step-estimate.md` lists the table and the measured errors.
"""
from __future__ import annotations

from dataclasses import dataclass

from hloscope.devices import Device, get_device

DATASHEET, XLA, FIT, DEFAULT = "datasheet", "xla", "fit", "default"
H100_RESULTS = "benchmarks/results/step_time_h100.txt"
UNCHECKED = "unchecked: no measurement on this device yet"
MEASURED = "measured"


@dataclass(frozen=True)
class Figure:
    """One calibrated number: `kind` is datasheet, xla, fit or default."""

    value: float
    kind: str
    source: str
    checked_by: str = UNCHECKED

    def to_dict(self) -> dict[str, object]:
        return {"value": self.value, "kind": self.kind, "source": self.source,
                "checked_by": self.checked_by}


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


_XLA_GPU_MODEL = "xla/service/gpu/model/gpu_performance_model_base.h"
_GPU_LAUNCH = Figure(1e-6, XLA, f"{_XLA_GPU_MODEL}: kKernelLaunchOverhead = 1 us")
_NCCL_LAUNCH = Figure(5e-6, XLA, f"{_XLA_GPU_MODEL}: kNcclKernelLaunchOverhead = 5 us")
_L2_SPEEDUP = Figure(2.5, XLA, f"{_XLA_GPU_MODEL}: kL2CacheSpeedup = 2.5")
_NVLINK_HOP = Figure(
    2e-6, DEFAULT, "stated default: NVLink/NVSwitch hop latency of a few microseconds "
    "(no vendor figure)")
_H100_FIT = ("fit on the blockwise-attention llama-1b steps measured on an H100 "
             "(benchmarks/results/gpu_measured_llama1b_blockwise_h100.json, 3 programs) by "
             "benchmarks/step_time_h100.py")
_H100_CHECK = (f"the plain-attention steps (benchmarks/results/gpu_measured_llama1b_h100.json, "
               f"5 programs, not fitted on): {H100_RESULTS}")
_GPU_HOST_OVERLAP = Figure(
    0.0, MEASURED, "H100, llama-1b 8 x 2048 (benchmarks/results/gpu_measured_llama1b_h100.json): "
    "offloading mlp_gate and mlp_up measured 288 ms over `full` for 298 ms of PCIe transfers; "
    "XLA:GPU waits for each copy right after it starts, so the transfers are exposed whole",
    "the compiled offload program's own schedule walk (fixtures/steptime/h100_plain_names-"
    "mlp_gateoffload-mlp_upoffload.hlo.gz): 264.9 of 297.9 ms of transfers exposed")


PCIE_PAYLOAD_EFFICIENCY = 128 / 130 * 256 / (256 + 24)
"""What of a PCIe link's line rate carries data: 128b/130b encoding (PCIe 3.0 and later) and
256-byte TLP payloads behind about 24 bytes of header, sequence number, CRC and framing."""


def _gpu(name: str, matmul: Figure, memory: Figure, host_source: str,
         tile: tuple[int, int, int], tile_source: str) -> Calibration:
    device = get_device(name)
    assert device.host_link_bandwidth is not None and device.cuda is not None
    host_per_direction = device.host_link_bandwidth / 2
    return Calibration(
        device=name, matmul_efficiency=matmul, memory_efficiency=memory, matmul_tile=tile,
        matmul_tile_source=tile_source, op_overhead=_GPU_LAUNCH,
        collective_overhead=_NCCL_LAUNCH, hop_latency=_NVLINK_HOP,
        host_link=Figure(host_per_direction * PCIE_PAYLOAD_EFFICIENCY, DATASHEET,
                         f"{host_source}, halved, times the PCIe payload efficiency "
                         f"{PCIE_PAYLOAD_EFFICIENCY:.3f} (128b/130b encoding, 256-byte TLPs)",
                         _H100_CHECK if name == "h100" else UNCHECKED),
        host_overlap=_GPU_HOST_OVERLAP, cache_bytes=device.cuda.l2_cache_size,
        cache_speedup=_L2_SPEEDUP)


_TPU_MATMUL = Figure(0.75, DEFAULT, "stated default: no TPU step has been measured here")
_TPU_MEMORY = Figure(0.85, DEFAULT, "stated default: no TPU step has been measured here")
_TPU_OP = Figure(0.5e-6, DEFAULT, "stated default: a TPU op is issued by the core's own "
                 "program, no host launch; no published figure")
_TPU_HOP = Figure(1e-6, DEFAULT, "stated default: ICI hop latency, no published figure")
_TPU_HOST = Figure(16e9, DEFAULT, "stated default: no host-link bandwidth is published for "
                   "Cloud TPU (v6e: 'PCIe Gen5', no lanes); 16 GB/s per chip each way, the "
                   "sensitivity line of every offload row says what the ranking needs")
_TPU_HOST_OVERLAP = Figure(
    1.0, MEASURED, "MaxText pull request 546: Llama 2 70B on v5p-128 ran at 65% MFU with q/k/v "
    "offloaded against 63% without; libtpu overlaps the transfers with the phase's compute",
    "unchecked: the only published TPU offload measurement is its source")
_MXU_128 = ((8, 128, 128), "Cloud TPU docs (system architecture): 128 x 128 systolic MXU; "
            "rows stream in groups of 8 sublanes")
_MXU_256 = ((8, 256, 256), "Cloud TPU docs v6e: 256 x 256 MXU")
_MXU_TPU7X = ((8, 256, 256), "taken as v6e's 256 x 256 MXU: not verified for TPU7x")


def _tpu(name: str, tile: tuple[tuple[int, int, int], str]) -> Calibration:
    return Calibration(
        device=name, matmul_efficiency=_TPU_MATMUL, memory_efficiency=_TPU_MEMORY,
        matmul_tile=tile[0], matmul_tile_source=tile[1], op_overhead=_TPU_OP,
        collective_overhead=_TPU_OP, hop_latency=_TPU_HOP, host_link=_TPU_HOST,
        host_overlap=_TPU_HOST_OVERLAP)


CALIBRATIONS: dict[str, Calibration] = {
    "h100": _gpu(
        "h100",
        matmul=Figure(0.75, DEFAULT, "stated default: large bf16 GEMMs reach about three "
                      "quarters of the dense peak; not fitted", _H100_CHECK),
        memory=Figure(0.823, FIT, _H100_FIT, _H100_CHECK),
        host_source="NVIDIA H100 datasheet: PCIe Gen5 128 GB/s (both directions)",
        tile=(64, 8, 16), tile_source="PTX ISA: wgmma.mma_async m64nNk16 (bf16), N a multiple "
        "of 8"),
    "a100": _gpu(
        "a100", matmul=Figure(0.75, DEFAULT, "stated default, as h100's"),
        memory=Figure(0.80, DEFAULT, "h100's fitted figure, not fitted on an A100"),
        host_source="NVIDIA A100 datasheet: PCIe Gen4 64 GB/s (both directions)",
        tile=(16, 8, 16), tile_source="PTX ISA: mma.sync m16n8k16 (bf16)"),
    "v2": _tpu("v2", _MXU_128), "v3": _tpu("v3", _MXU_128), "v4": _tpu("v4", _MXU_128),
    "v5e": _tpu("v5e", _MXU_128), "v5p": _tpu("v5p", _MXU_128), "v6e": _tpu("v6e", _MXU_256),
    "tpu7x": _tpu("tpu7x", _MXU_TPU7X),
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
    whole = Figure(1.0, MEASURED, f"{source}: the measured rates are reached rates")
    no_link = Figure(float("inf"), MEASURED, "the CPU has no host link: its memory is the host's")
    return device, Calibration(
        device="cpu", matmul_efficiency=whole, memory_efficiency=whole, matmul_tile=(1, 1, 1),
        matmul_tile_source="no matmul unit tile on a CPU",
        op_overhead=Figure(op_seconds, MEASURED, source),
        collective_overhead=Figure(0.0, MEASURED, "one device: no collectives"),
        hop_latency=Figure(0.0, MEASURED, "one device: no collectives"), host_link=no_link)
