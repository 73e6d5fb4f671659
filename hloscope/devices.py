"""Device facts the analyses share: memory, peak FLOP/s, bandwidths and what `S(n)` means.

Every figure is per *JAX device* (what XLA compiles one SPMD partition for), because that is what
a dump describes: a v3 or v2 chip is two JAX devices (one per TensorCore), a v4 or v5p chip is one
(megacore), a TPU7x chip is two (one per chiplet). Chip-level vendor figures are divided by
`devices_per_chip` where the device owns half of the chip (HBM and FLOP/s); interconnect figures
stay per chip. Units: bytes, bytes/s and FLOP/s (1e9 for the vendors' "GB", "GBps", "TFLOPs").

Two memory figures must never be confused: `hbm_bytes` is the physical memory of the device and
`usable_memory_bytes` what XLA lets one program use (TPU: read from libtpu's OOM verdicts, printed
with two decimals, so +-5 MiB: `hloscope.calibration.tpu`; GPU: the total memory CUDA reports, of
which JAX's allocator takes `JAX_DEFAULT_GPU_MEMORY_FRACTION` unless told otherwise: see
`memory_budget`).

Host facts: `host_memory_bytes` is the RAM of one host shared by `host_memory_chips` chips (the
pool pinned host buffers come from: `hloscope.analyses.summary.variant` checks offloading
programs against it), `host_link_bandwidth` the PCIe figure and `dcn_bandwidth` the data-center
network share of one chip (each direction).

Sources are cited next to each figure: "Cloud TPU docs" are docs.cloud.google.com/tpu/docs/<ver>,
"measured" means a deviceless compile on this project's machine (jax 0.10.2, libtpu 0.0.42.1).
Figures that are measured or stated rather than published (usable HBM, JAX's memory fraction)
come from `hloscope.calibration`, with their sources and the tests that check them.
A figure that could not be verified is None, never a guess. GPU entries also carry the facts XLA's
GpuTargetConfigProto needs for a deviceless CUDA compile; `render_gpu_target_config` writes that
text. Importing this module never imports jax.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any

from hloscope.calibration import gpu as gpu_calibration
from hloscope.calibration import tpu as tpu_calibration
from hloscope.errors import UsageError

GIB = 1 << 30
GB = 10**9
TERA = 10**12

JAX_DEFAULT_GPU_MEMORY_FRACTION = gpu_calibration.JAX_MEMORY_FRACTION.value


class MemoryLocation(StrEnum):
    """Where a memory space physically lives."""

    DEVICE = "device"  # the device's main memory (HBM; for the cpu pseudo-device, host RAM)
    ON_CHIP = "on-chip"  # SRAM next to the cores (TPU VMEM): does not count against HBM
    HOST = "host"  # host RAM reached over the host link (pinned host memory)
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class MemorySpace:
    """What layout memory space `S(number)` means on one backend."""

    number: int
    name: str
    location: MemoryLocation
    source: str


HOST_MEMORY_SPACE = 5  # xla/layout.h Layout::kHostMemorySpace: pinned host memory, every backend
_HOST_SPACE_SOURCE = "xla/layout.h Layout::kHostMemorySpace = 5"

MEMORY_SPACES: dict[str, tuple[MemorySpace, ...]] = {
    "tpu": (
        MemorySpace(0, "HBM", MemoryLocation.DEVICE, "xla/layout.h kDefaultMemorySpace = 0"),
        # Measured: libtpu's memory-usage report names color 1 "vmem" and color 2 "smem"; small
        # programs keep every temporary in S(1) (memory_analysis then reports HBM temp 0) and S(2)
        # holds u32[] DMA/sync flags. xla/layout.h calls 1 kGenericFastMemorySpace.
        MemorySpace(1, "VMEM", MemoryLocation.ON_CHIP, "measured (memory-usage report)"),
        MemorySpace(2, "SMEM", MemoryLocation.ON_CHIP, "measured (memory-usage report)"),
        # Measured: memory_kind="pinned_host" outputs get S(5) and out_memory_spaces="0;5".
        MemorySpace(5, "pinned host", MemoryLocation.HOST, f"measured; {_HOST_SPACE_SOURCE}"),
        # Measured: f32[]/s32[]/pred[] scalars in 512-byte tiles, 2 KiB in all; the report calls
        # it only "color_6", so where it lives is not established.
        MemorySpace(6, "color_6 (scalars)", MemoryLocation.UNKNOWN, "measured; unnamed"),
    ),
    "gpu": (
        MemorySpace(0, "device HBM", MemoryLocation.DEVICE, "xla/layout.h kDefaultMemorySpace"),
        # xla/service/gpu/gpu_memory_space_assignment.h: kCollectiveMemorySpaceColor = 1 (buffers of
        # all-reduce/all-gather/... allocated with ncclMemAlloc) and kTempBufferMemorySpaceColor = 2
        # (with xla_gpu_temp_buffer_use_separate_color); both are ordinary device memory.
        MemorySpace(1, "collective memory", MemoryLocation.DEVICE, "gpu_memory_space_assignment.h"),
        MemorySpace(2, "temporaries", MemoryLocation.DEVICE, "gpu_memory_space_assignment.h"),
        # stream_executor/memory_space.h MemorySpace::kHost = 5 as well. Not observed: deviceless
        # CUDA compiles drop memory_kind="pinned_host" (the output stays in S(0)).
        MemorySpace(5, "pinned host", MemoryLocation.HOST, _HOST_SPACE_SOURCE),
    ),
    "cpu": (MemorySpace(0, "host RAM", MemoryLocation.DEVICE, "the CPU device's memory is RAM"),),
}


@dataclass(frozen=True)
class PeakFlops:
    """Dense (no sparsity) peak FLOP/s (OP/s for int8) of one JAX device; None when unpublished."""

    bf16: float | None = None
    f32: float | None = None  # TPUs: no vendor figure (f32 matmuls run as several bf16 passes)
    tf32: float | None = None
    fp8: float | None = None
    int8: float | None = None


@dataclass(frozen=True)
class CudaTargetFacts:
    """The fields of a text-format GpuTargetConfigProto (stream_executor/device_description.proto).

    None fields are left out of the rendered text. Values are copied from
    xla/backends/gpu/target_config/specs/<device>.txtpb (which record real devices' queries).
    """

    threads_per_block_limit: int
    threads_per_warp: int
    shared_memory_per_block: int
    shared_memory_per_core: int
    threads_per_core_limit: int
    core_count: int
    fpus_per_core: int
    block_dim_limit: tuple[int, int, int]
    memory_bandwidth: int
    l2_cache_size: int
    clock_rate_ghz: float
    device_memory_size: int
    shared_memory_per_block_optin: int
    compute_capability: tuple[int, int]
    feature_extension: str  # CudaComputeCapabilityProto.FeatureExtension (NONE, ...)
    registers_per_core_limit: int
    registers_per_block_limit: int
    thread_dim_limit: tuple[int, int, int]
    device_description_str: str
    dnn_version_info: tuple[int, int, int]
    device_vendor: str | None = None
    platform_version: str | None = None
    model_str: str | None = None
    device_address_bits: int | None = None
    pcie_bandwidth: int | None = None
    ecc_enabled: bool | None = None
    name: str | None = None
    driver_version: str | None = None
    runtime_version: str | None = None
    compile_time_toolkit_version: str | None = None
    dnn_version: str | None = None
    cub_version: str | None = None
    interconnect_active_links: int | None = None


@dataclass(frozen=True)
class Device:
    """Facts about one kind of accelerator, per JAX device unless a field says per chip."""

    name: str  # the key get_device() takes and target strings use: "v5e", "h100", "cpu"
    backend: str  # "tpu", "gpu" or "cpu"
    description: str
    device_kind: str | None  # jax Device.device_kind (measured on deviceless topologies)
    usable_memory_bytes: int | None
    hbm_bytes: int | None
    peak_flops: PeakFlops
    hbm_bandwidth: float | None
    interconnect_bandwidth: float | None  # per chip, both directions (ICI / NVLink)
    host_link_bandwidth: float | None  # per chip, both directions (PCIe)
    # Per chip, each direction: the host's NIC line rate shared by its chips (Ethernet NICs are
    # full duplex, so the vendors' "Gbps" is per direction).
    dcn_bandwidth: float | None = None
    devices_per_chip: int = 1
    chips_per_host: int | None = None
    # RAM of one host: the TPU VM a JAX process runs on where the docs give the VM's figure,
    # else the physical host's "DRAM per host"; shared by `host_memory_chips` chips (pinned host
    # buffers come out of it). None where no vendor figure was verified.
    host_memory_bytes: int | None = None
    host_memory_chips: int | None = None
    interconnect_topology: str | None = None
    example_topologies: tuple[str, ...] = ()  # accepted by get_topology_desc (measured)
    chip_config_name: str | None = None  # get_topology_desc(chip_config_name=...) when required
    cuda: CudaTargetFacts | None = None

    @property
    def memory_spaces(self) -> tuple[MemorySpace, ...]:
        return MEMORY_SPACES[self.backend]

    @property
    def devices_per_host(self) -> int | None:
        """JAX devices sharing `host_memory_bytes`; None when the host memory is unknown."""
        if self.host_memory_bytes is None or self.host_memory_chips is None:
            return None
        return self.host_memory_chips * self.devices_per_chip


def _gib(value: float) -> int:
    return round(value * GIB)


def _usable_hbm(name: str) -> int:
    """What libtpu's OOM verdict says a program may use (`hloscope.calibration.tpu`)."""
    return _gib(tpu_calibration.USABLE_HBM_GIB[name].value)


_TPUS = (
    Device(
        name="v2", backend="tpu", description="TPU v2 (one TensorCore per JAX device)",
        device_kind="TPU v2",
        usable_memory_bytes=_usable_hbm("v2"),
        # One 8 GB HBM stack per TensorCore (Golem on Cloud TPU v2, quoted by fitforfrag.de);
        # consistent with the 7.48 GiB usable.
        hbm_bytes=8 * GIB,
        # 45 TFLOPS per two-core chip (elektroniknet.de, Google's TPUv2 figures).
        peak_flops=PeakFlops(bf16=45 * TERA / 2),
        hbm_bandwidth=None, interconnect_bandwidth=None, host_link_bandwidth=None,
        devices_per_chip=2,  # measured: v2:2x2 has 8 devices, core_on_chip 0 and 1
        chips_per_host=4, interconnect_topology="2D torus",  # v2-8 as v3-8: not checked
        example_topologies=("v2:2x2",),
    ),
    Device(
        name="v3", backend="tpu", description="TPU v3 (one TensorCore per JAX device)",
        device_kind="TPU v3",
        usable_memory_bytes=_usable_hbm("v3"),
        # Cloud TPU docs v3: "HBM2 capacity and bandwidth 32 GiB, 900 GBps", "123 teraflops
        # (bf16)" per chip of two TensorCores; halved per device (assumes an even split).
        hbm_bytes=16 * GIB, peak_flops=PeakFlops(bf16=123 * TERA / 2),
        hbm_bandwidth=900 * GB / 2, interconnect_bandwidth=None, host_link_bandwidth=None,
        devices_per_chip=2,  # measured: v3:2x2 has 8 devices
        chips_per_host=4,  # Cloud TPU docs: a single v3 TPU is v3-8 (8 TensorCores, 4 chips)
        interconnect_topology="2D torus",  # Cloud TPU docs v3
        example_topologies=("v3:2x2",),
    ),
    Device(
        name="v4", backend="tpu", description="TPU v4 chip (megacore: both TensorCores)",
        device_kind="TPU v4",
        usable_memory_bytes=_usable_hbm("v4"),
        # Cloud TPU docs v4: "275 teraflops (bf16 or int8)", "32 GiB, 1200 GBps".
        hbm_bytes=32 * GIB, peak_flops=PeakFlops(bf16=275 * TERA, int8=275 * TERA),
        hbm_bandwidth=1200 * GB, interconnect_bandwidth=None, host_link_bandwidth=None,
        chips_per_host=4,  # v4-8 = 2x2x1, 4 chips: not checked against the docs here
        interconnect_topology="3D mesh (3D torus on full-cube slices)",  # Cloud TPU docs v4
        example_topologies=("v4:2x2x1",), chip_config_name="megacore",  # docs/targets.md
    ),
    Device(
        name="v5e", backend="tpu", description="TPU v5e (v5 lite) chip",
        device_kind="TPU v5 lite",
        usable_memory_bytes=_usable_hbm("v5e"),
        # Cloud TPU docs v5e: 197 TFLOPs bf16, 393 TOPs int8, "16 GB, 819 GBps" (a newer page
        # says 800 GBps), 400 GBps bidirectional ICI per chip, 8 chips per host, 2 x 100 Gbps NIC
        # per host (25 Gbps per chip). 16 GB must be GiB: 15.75 GiB are usable.
        # Host memory, Cloud TPU docs v5e "VM types": 8-chip VM (ct5lp-hightpu-8t) 384 GB RAM
        # (4-chip VM 192 GB, 1-chip 48 GB: 48 GB per chip in each); the page's "DRAM per host"
        # is 512 GiB, of which a VM gets 384 GB. No host-link (PCIe) figure is published: None.
        hbm_bytes=16 * GIB, peak_flops=PeakFlops(bf16=197 * TERA, int8=393 * TERA),
        hbm_bandwidth=819 * GB, interconnect_bandwidth=400 * GB, host_link_bandwidth=None,
        dcn_bandwidth=25e9 / 8, chips_per_host=8, interconnect_topology="2D torus",
        host_memory_bytes=384 * GB, host_memory_chips=8,
        example_topologies=("v5e:2x2", "v5e:4x4", "v5e:16x16"),
    ),
    Device(
        name="v5p", backend="tpu", description="TPU v5p chip (megacore: both TensorCores)",
        device_kind="TPU v5",
        usable_memory_bytes=_usable_hbm("v5p"),
        # Cloud TPU docs v5p: 459 TFLOPs bf16 and fp8, 2765 GBps HBM, 1200 GBps bidirectional ICI,
        # 50 Gbps DCN per chip, 4 chips per host (2x2x1). The docs give "95 GiB" of HBM, below the
        # 95.74 GiB libtpu lets a program use, so the physical size is not established: None.
        # Host memory, Cloud TPU docs v5p: "RAM (GB) (4-chip VM) 448" (ct5p-hightpu-4t). No
        # host-link (PCIe) figure is published: None.
        hbm_bytes=None, peak_flops=PeakFlops(bf16=459 * TERA, fp8=459 * TERA),
        hbm_bandwidth=2765 * GB, interconnect_bandwidth=1200 * GB, host_link_bandwidth=None,
        dcn_bandwidth=50e9 / 8, chips_per_host=4, interconnect_topology="3D torus",
        host_memory_bytes=448 * GB, host_memory_chips=4,
        example_topologies=("v5p:2x2x1", "v5p:4x4x4"),  # measured: 4 devices on 2x2x1
    ),
    Device(
        name="v6e", backend="tpu", description="TPU v6e (Trillium) chip",
        device_kind="TPU v6 lite",
        usable_memory_bytes=_usable_hbm("v6e"),
        # Cloud TPU docs v6e: 918 TFLOPs bf16, 1836 TOPs int8, 32 GB (GiB: 31.25 GiB usable),
        # 1640 GBps HBM (the TPU7x page's table says 1638), 800 GBps bidirectional ICI, 8 chips
        # per host, 4 x 200 Gbps NIC per host; fp8 918 TFLOPs (TPU7x page's comparison table).
        # Host memory, Cloud TPU docs v6e: "DRAM per host 1536 GiB", "Chips per host 8". Multi-host
        # slices run two 4-chip VMs (ct6e-standard-4t) per host; the VM's RAM was not verified, so
        # the check uses the host's DRAM over its 8 chips (what a VM gets is at most its share).
        # The docs say each chip "connects to the host through a PCIe Gen5 interface" without
        # lanes or bandwidth: host_link_bandwidth stays None.
        hbm_bytes=32 * GIB,
        peak_flops=PeakFlops(bf16=918 * TERA, fp8=918 * TERA, int8=1836 * TERA),
        hbm_bandwidth=1640 * GB, interconnect_bandwidth=800 * GB, host_link_bandwidth=None,
        dcn_bandwidth=100e9 / 8, chips_per_host=8, interconnect_topology="2D torus",
        host_memory_bytes=1536 * GIB, host_memory_chips=8,
        example_topologies=("v6e:2x2",),
    ),
    Device(
        name="tpu7x", backend="tpu", description="TPU7x (Ironwood) chiplet (two per chip)",
        device_kind="TPU7x",
        usable_memory_bytes=_usable_hbm("tpu7x"),
        # Cloud TPU docs tpu7x, per chip: 2307 TFLOPs bf16, 4614 fp8, 192 GiB HBM, 7380 GBps,
        # 1200 GBps bidirectional ICI, 100 Gbps DCN; "two TPU devices" per chip (dual chiplet),
        # 4 chips per VM. Halved per device (assumes each chiplet owns half). The VM's RAM and
        # the host link were not verified: None.
        hbm_bytes=96 * GIB, peak_flops=PeakFlops(bf16=2307 * TERA / 2, fp8=4614 * TERA / 2),
        hbm_bandwidth=7380 * GB / 2, interconnect_bandwidth=1200 * GB, host_link_bandwidth=None,
        dcn_bandwidth=100e9 / 8,
        devices_per_chip=2,  # measured: tpu7x:2x2x1 has 8 devices, core_on_chip 0 and 1
        chips_per_host=4, interconnect_topology="3D torus", example_topologies=("tpu7x:2x2x1",),
    ),
)

# Fields equal in the A100 and H100 XLA target specs.
_CUDA_COMMON: dict[str, Any] = dict(
    threads_per_block_limit=1024, threads_per_warp=32, shared_memory_per_block=49152,
    threads_per_core_limit=2048, block_dim_limit=(2147483647, 65535, 65535),
    registers_per_core_limit=65536, registers_per_block_limit=65536,
    thread_dim_limit=(1024, 1024, 64), dnn_version_info=(8, 9, 4),
)

_H100_CUDA = CudaTargetFacts(
    # xla/backends/gpu/target_config/specs/h100_sxm.txtpb (= ../shared/reference/...)
    **_CUDA_COMMON, shared_memory_per_core=233472, core_count=132, fpus_per_core=128,
    memory_bandwidth=3352320000000, l2_cache_size=52428800, clock_rate_ghz=1.98,
    device_memory_size=84942979072, shared_memory_per_block_optin=232448,
    compute_capability=(9, 0), feature_extension="ACCELERATED_FEATURES",
    device_description_str="NVIDIA H100 80GB HBM3", device_vendor="NVIDIA Corporation",
    platform_version="Compute Capability 9.0a",
    model_str="sm_9.0a with 84942979072B RAM, 132 cores, 1980000KHz clock, 2619000KHz mem clock,"
    " 52428800B L2$",
    device_address_bits=64, pcie_bandwidth=34359738368, ecc_enabled=True,
    name="NVIDIA H100 80GB HBM3", driver_version="13.0.0", runtime_version="12.8.0",
    compile_time_toolkit_version="12.8.0", dnn_version="9.10.0", cub_version="3.1.2",
    interconnect_active_links=18,
)

_A100_CUDA = CudaTargetFacts(
    # xla/backends/gpu/target_config/specs/a100_sxm_80.txtpb (= ../shared/reference/...)
    **_CUDA_COMMON, shared_memory_per_core=167936, core_count=108, fpus_per_core=64,
    memory_bandwidth=2039040000000, l2_cache_size=41943040, clock_rate_ghz=1.41,
    device_memory_size=85100068864, shared_memory_per_block_optin=166912,
    compute_capability=(8, 0), feature_extension="NONE",
    device_description_str="NVIDIA A100-SXM4-80GB", dnn_version="8.9.4",
)

_GPUS = (
    Device(
        name="h100", backend="gpu", description="NVIDIA H100 SXM5 80GB",
        device_kind=_H100_CUDA.device_description_str,
        usable_memory_bytes=_H100_CUDA.device_memory_size,  # what CUDA reports (XLA spec file)
        # NVIDIA H100 datasheet: 80GB HBM3 (GiB: CUDA reports 79.1 GiB), 3.35 TB/s, NVLink
        # 900 GB/s, PCIe Gen5 128 GB/s; dense Tensor Core bf16 989.4, fp8 and int8 1978.9,
        # tf32 494.7, non-tensor fp32 66.9 TFLOPS (datasheet lists sparse figures, 2x). XLA's
        # h100_sxm.txtpb agrees: bf16 512 FMA/clock x 4 units x 132 SMs x 1.8295 GHz = 989.4e12.
        hbm_bytes=80 * GIB,
        peak_flops=PeakFlops(bf16=989.4 * TERA, f32=66.9 * TERA, tf32=494.7 * TERA,
                             fp8=1978.9 * TERA, int8=1978.9 * TERA),
        hbm_bandwidth=3.35 * TERA, interconnect_bandwidth=900 * GB, host_link_bandwidth=128 * GB,
        chips_per_host=8, interconnect_topology="NVLink 4 via NVSwitch (HGX H100 8-GPU board)",
        example_topologies=("1x1x8", "1x2x8"), cuda=_H100_CUDA,
    ),
    Device(
        name="a100", backend="gpu", description="NVIDIA A100 SXM4 80GB",
        device_kind=_A100_CUDA.device_description_str,
        usable_memory_bytes=_A100_CUDA.device_memory_size,
        # NVIDIA A100 datasheet: 80GB HBM2e, 2039 GB/s, NVLink 600 GB/s, PCIe Gen4 64 GB/s;
        # dense bf16 312, tf32 156, fp32 19.5 TFLOPS, int8 624 TOPS.
        hbm_bytes=80 * GIB,
        peak_flops=PeakFlops(bf16=312 * TERA, f32=19.5 * TERA, tf32=156 * TERA, int8=624 * TERA),
        hbm_bandwidth=2039 * GB, interconnect_bandwidth=600 * GB, host_link_bandwidth=64 * GB,
        chips_per_host=8, interconnect_topology="NVLink 3 via NVSwitch (HGX A100 8-GPU board)",
        example_topologies=("1x1x1", "1x1x8"), cuda=_A100_CUDA,
    ),
)

_CPU = Device(
    name="cpu", backend="cpu", description="the host CPU (XLA:CPU), a pseudo-device",
    device_kind="cpu", usable_memory_bytes=None, hbm_bytes=None, peak_flops=PeakFlops(),
    hbm_bandwidth=None, interconnect_bandwidth=None, host_link_bandwidth=None,
)

DEVICES: dict[str, Device] = {d.name: d for d in (*_TPUS, *_GPUS, _CPU)}


def get_device(name: str) -> Device:
    """The device called `name` (case-insensitive); UsageError naming the known ones otherwise."""
    device = DEVICES.get(name.strip().lower())
    if device is None:
        known = ", ".join(DEVICES)
        raise UsageError(f"unknown device {name!r}; known devices: {known}")
    return device


def memory_space(backend: str, number: int) -> MemorySpace:
    """What `S(number)` means on `backend` ("tpu", "gpu", "cpu"); UNKNOWN when not established."""
    spaces = _spaces(backend)
    for space in spaces:
        if space.number == number:
            return space
    return MemorySpace(number, f"S({number})", MemoryLocation.UNKNOWN, "not established")


def memory_location(backend: str, number: int) -> MemoryLocation:
    """Which physical memory `S(number)` lives in on `backend`: device, on-chip, host or unknown."""
    return memory_space(backend, number).location


def check_device_or_capacity(device: str | None, capacity: object, *,
                              options: bool = False) -> None:
    """A UsageError when a memory limit is given both ways: a device's budget and a capacity.

    Every command and API function that judges a program against one memory limit takes either
    a device name or a byte count; `options` spells them as the CLI's --device and --capacity.
    """
    if device is not None and capacity is not None:
        dashes = "--" if options else ""
        raise UsageError(f"give {dashes}device or {dashes}capacity, not both")


def memory_budget(device: Device, fraction: float | None = None) -> int | None:
    """Bytes one program may use: TPU usable HBM; GPU total x `fraction` (JAX's default 0.75)."""
    if device.usable_memory_bytes is None:
        return None
    if device.backend != "gpu":
        return device.usable_memory_bytes
    share = JAX_DEFAULT_GPU_MEMORY_FRACTION if fraction is None else fraction
    return int(device.usable_memory_bytes * share)


def _spaces(backend: str) -> tuple[MemorySpace, ...]:
    spaces = MEMORY_SPACES.get(backend.lower())
    if spaces is None:
        raise UsageError(f"unknown backend {backend!r}; known backends: {', '.join(MEMORY_SPACES)}")
    return spaces


class _Enum(str):
    """A text-format enum value: rendered without quotes."""


def render_gpu_target_config(device: Device) -> str:
    """The text-format GpuTargetConfigProto a deviceless CUDA compile of `device` needs."""
    if device.cuda is None:
        raise UsageError(f"{device.name} is not a CUDA GPU; known GPUs: "
                         + ", ".join(d.name for d in DEVICES.values() if d.cuda))
    facts = device.cuda
    major, minor, patch = facts.dnn_version_info
    message: list[tuple[str, object]] = [
        ("gpu_device_info", _device_info_fields(facts)),
        ("platform_name", "CUDA"),
        ("dnn_version_info", [("major", major), ("minor", minor), ("patch", patch)]),
        ("device_description_str", facts.device_description_str),
    ]
    return "".join(_render_fields(message, indent=0))


def _device_info_fields(facts: CudaTargetFacts) -> list[tuple[str, object]]:
    grouped = {"block_dim_limit", "thread_dim_limit", "compute_capability", "feature_extension",
               "device_description_str", "dnn_version_info", "interconnect_active_links"}
    result: list[tuple[str, object]] = []
    for field in fields(facts):
        value = getattr(facts, field.name)
        if field.name in grouped:
            result.extend(_grouped_field(facts, field.name))
        elif value is not None:
            result.append((field.name, value))
    return result


def _grouped_field(facts: CudaTargetFacts, name: str) -> list[tuple[str, object]]:
    """Proto fields our dataclass keeps as tuples or flattened sub-messages."""
    if name in ("block_dim_limit", "thread_dim_limit"):
        return [(f"{name}_{axis}", value)
                for axis, value in zip("xyz", getattr(facts, name), strict=True)]
    if name == "compute_capability":
        major, minor = facts.compute_capability
        capability: list[tuple[str, object]] = [("major", major)]
        capability += [("minor", minor)] if minor else []
        capability.append(("feature_extension", _Enum(facts.feature_extension)))
        return [("cuda_compute_capability", capability)]
    if name == "interconnect_active_links" and facts.interconnect_active_links is not None:
        return [("device_interconnect_info", [("active_links", facts.interconnect_active_links)])]
    return []


def _render_fields(items: list[tuple[str, object]], indent: int) -> list[str]:
    pad = "  " * indent
    lines: list[str] = []
    for key, value in items:
        if isinstance(value, list):
            lines.append(f"{pad}{key} {{\n")
            lines.extend(_render_fields(value, indent + 1))
            lines.append(f"{pad}}}\n")
        else:
            lines.append(f"{pad}{key}: {_scalar(value)}\n")
    return lines


def _scalar(value: object) -> str:
    if isinstance(value, _Enum):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    return repr(value) if isinstance(value, float) else str(value)
