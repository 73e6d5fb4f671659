"""Real profiler captures others wrote, read from `../shared/wild-traces/` beside the repository
(never copied into it; its README gives each file's source). A test that needs one is skipped
when the folder is not there.

The figures below are independent of hloscope: xprof 2.24.2's reading of the TPU capture (the
folder's README) and counts read by hand from the capture's bytes (the XLA Ops lines' event
counts, the ids in the program names)."""
from __future__ import annotations

from pathlib import Path

import pytest

FOLDER = Path(__file__).resolve().parents[1].parent / "shared" / "wild-traces"
TPU = "xprof__tpu_inference_2__v1.xplane.pb"
TPU_EXPORT = "xprof__tpu_inference_2__v1.xprof_export.trace.json.gz"
TPU_DAMAGED = "xprof__tpu_inference_2__v2.xplane.pb"
TENSORFLOW_GPU = "xprof__gpu_multi_worker.xplane.pb"
KINETO = ("hta__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
          "hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
          "hta__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")

# The TPU capture's programs, as their names in /host:metadata and "XLA Modules" spell them.
JIT_F, PSUM, BROADCAST, CONVERT = (12190760917235803885, 9646411105960254074,
                                   11287434908481120160, 2433868464432466958)
# The same ids as the metadata plane keys its event metadata: signed 64-bit.
SIGNED_IDS = {JIT_F: -6255983156473747731, BROADCAST: -7159309165228431456,
              PSUM: -8800332967749297542, CONVERT: 2433868464432466958}
# xprof 2.24.2 on the TPU capture (the folder's README).
XPROF_OPS, XPROF_PROGRAMS = 17, 3
XPROF_TOTAL_US = 315_117_904
XPROF_JIT_F_S = 313.65
XPROF_COPY_DONE_S = (72.9, 77.8)  # jit_f's four largest ops, the copy-done host transfers
XPROF_PEAK_IN_USE = 21_492_671_104
# Read from the capture's bytes: events on each core's "XLA Ops" line, on TPU:0's "Async XLA
# Ops" line; jit_f ran 100 times on each of the 4 cores, its entry has 15 ops.
OPS_PER_CORE = (1504, 1503, 1503, 1503)
ASYNC_EVENTS = 600
CORES, JIT_F_RUNS, JIT_F_OPS = 4, 100, 15


def wild(name: str) -> Path:
    """The capture `name` of the shared folder; skips the test when it is not there."""
    path = FOLDER / name
    if not path.exists():
        pytest.skip(f"{path} is not here (the shared wild-traces folder)")
    return path
