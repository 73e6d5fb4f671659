"""The GPU figures: the step-time model's (H100, A100) and JAX's share of device memory."""
from __future__ import annotations

from hloscope.calibration.figure import DATASHEET, DEFAULT, FIT, MEASURED, XLA, Figure

H100_RESULTS = "benchmarks/results/step_time_h100.txt"
_H100_TEST = "tests/analyses/steptime/test_step_time_h100_measured.py"
_XLA_GPU_MODEL = "xla/service/gpu/model/gpu_performance_model_base.h"
_H100_FIT = ("fit on the blockwise-attention llama-1b steps measured on an H100 "
             "(benchmarks/results/gpu_measured_llama1b_blockwise_h100.json, 3 programs) by "
             "benchmarks/step_time_h100.py")
H100_CHECK = (f"the plain-attention steps (benchmarks/results/gpu_measured_llama1b_h100.json, "
              f"5 programs, not fitted on): {H100_RESULTS}; "
              f"{_H100_TEST}::test_every_measured_h100_step_is_predicted_within_15_percent")

# docs.jax.dev gpu_memory_allocation: "JAX will preallocate 75% of the total GPU memory"
# (XLA's GpuAllocatorConfig::memory_fraction; jaxlib reads XLA_CLIENT_MEM_FRACTION)
JAX_MEMORY_FRACTION = Figure(
    0.75, DATASHEET, "JAX's documented default preallocation (gpu_memory_allocation.html)",
    "the allocator limit JAX set on an H100 (fixtures/gpu-h100-jax011/profile-tiny/meta.json): "
    "tests/analyses/oom/test_oom_gpu_target.py"
    "::test_capacity_is_jaxs_share_of_what_the_gpu_reported")

KERNEL_LAUNCH = Figure(1e-6, XLA, f"{_XLA_GPU_MODEL}: kKernelLaunchOverhead = 1 us")
NCCL_LAUNCH = Figure(5e-6, XLA, f"{_XLA_GPU_MODEL}: kNcclKernelLaunchOverhead = 5 us")
L2_SPEEDUP = Figure(2.5, XLA, f"{_XLA_GPU_MODEL}: kL2CacheSpeedup = 2.5")
NVLINK_HOP = Figure(2e-6, DEFAULT, "stated default: NVLink/NVSwitch hop latency of a few "
                    "microseconds (no vendor figure)")
HOST_OVERLAP = Figure(
    0.0, MEASURED, "H100, llama-1b 8 x 2048 (benchmarks/results/gpu_measured_llama1b_h100.json): "
    "offloading mlp_gate and mlp_up measured 288 ms over `full` for 298 ms of PCIe transfers; "
    "XLA:GPU waits for each copy right after it starts, so the transfers are exposed whole",
    "the compiled offload program's own schedule walk (fixtures/steptime/h100_plain_names-"
    f"mlp_gateoffload-mlp_upoffload.hlo.gz): 264.9 of 297.9 ms of transfers exposed; "
    f"{_H100_TEST}::test_offloading_to_the_host_is_charged_its_exposed_pcie_time")

HEAP_ALIGNMENT = Figure(
    256, XLA, "kXlaAllocatedBufferAlignBytes = 256 (XLA of jax 0.10.2): every preallocated-temp "
    "offset in the GPU fixtures' buffer assignments (fixtures/gpu-h100-1x1x8) is a multiple of it",
    "tests/analyses/memory/test_heap.py::test_chunks_start_at_the_backends_alignment")

# what of a PCIe link's line rate carries data: 128b/130b encoding (PCIe 3.0 and later) and
# 256-byte TLP payloads behind about 24 bytes of header, sequence number, CRC and framing
PCIE_PAYLOAD_EFFICIENCY = 128 / 130 * 256 / (256 + 24)

H100_MATMUL = Figure(0.75, DEFAULT, "stated default: large bf16 GEMMs reach about three quarters "
                     "of the dense peak; not fitted", H100_CHECK)
H100_MEMORY = Figure(0.823, FIT, _H100_FIT, H100_CHECK)
H100_HOST_LINK = "NVIDIA H100 datasheet: PCIe Gen5 128 GB/s (both directions)"
H100_TILE = ((64, 8, 16), "PTX ISA: wgmma.mma_async m64nNk16 (bf16), N a multiple of 8")

A100_MATMUL = Figure(0.75, DEFAULT, "stated default, as h100's")
A100_MEMORY = Figure(0.80, DEFAULT, "h100's fitted figure, not fitted on an A100")
A100_HOST_LINK = "NVIDIA A100 datasheet: PCIe Gen4 64 GB/s (both directions)"
A100_TILE = ((16, 8, 16), "PTX ISA: mma.sync m16n8k16 (bf16)")
