"""The TPU figures: usable HBM per generation, the step-time model's stated defaults, and the
memory predictor's fits of libtpu's behaviour (docs/calibration.md, docs/frontier.md)."""
from __future__ import annotations

from hloscope.calibration.figure import DEFAULT, FIT, MEASURED, UNCHECKED, Figure

SQUEEZED = "fixtures/predict/llama-v5e-squeezed.json"  # llama-1b / v5e:2x2, llama-8b / v5e:4x4
_SQUEEZE_TESTS = "tests/analyses/predict/test_predictor_squeeze.py"
_OFFLOAD_TESTS = "tests/analyses/predict/test_predictor_offload.py"
_OOM_LIVE = "tests/workloads/test_workloads.py::test_tpu_oom_is_a_result_with_dumps (slow)"


def _usable(gib: float, checked_by: str = UNCHECKED) -> Figure:
    return Figure(gib, MEASURED, f'libtpu 0.0.42.1 OOM message "exceeds available HBM ({gib}G)" '
                  "(docs/targets.md)", checked_by)


# GiB a program may use per device: what libtpu's OOM verdict says is available
USABLE_HBM_GIB: dict[str, Figure] = {
    "v2": _usable(7.48), "v3": _usable(15.48), "v4": _usable(30.75),
    "v5e": _usable(15.75, f"{_OOM_LIVE}; fixtures/tpu-v5e-2x2-oom/manifest.json"),
    "v5p": _usable(95.74), "v6e": _usable(31.25), "tpu7x": _usable(94.75),
}

# the step-time model: nothing here has been measured on a TPU step yet
MATMUL_EFFICIENCY = Figure(0.75, DEFAULT, "stated default: no TPU step has been measured here")
MEMORY_EFFICIENCY = Figure(0.85, DEFAULT, "stated default: no TPU step has been measured here")
OP_OVERHEAD = Figure(0.5e-6, DEFAULT, "stated default: a TPU op is issued by the core's own "
                     "program, no host launch; no published figure")
HOP_LATENCY = Figure(1e-6, DEFAULT, "stated default: ICI hop latency, no published figure")
HOST_LINK = Figure(16e9, DEFAULT, "stated default: no host-link bandwidth is published for "
                   "Cloud TPU (v6e: 'PCIe Gen5', no lanes); 16 GB/s per chip each way, the "
                   "sensitivity line of every offload row says what the ranking needs")
HOST_OVERLAP = Figure(
    1.0, MEASURED, "MaxText pull request 546: Llama 2 70B on v5p-128 ran at 65% MFU with q/k/v "
    "offloaded against 63% without; libtpu overlaps the transfers with the phase's compute",
    "unchecked: the only published TPU offload measurement is its source")
MXU_128 = ((8, 128, 128), "Cloud TPU docs (system architecture): 128 x 128 systolic MXU; "
           "rows stream in groups of 8 sublanes")
MXU_256 = ((8, 256, 256), "Cloud TPU docs v6e: 256 x 256 MXU")
MXU_TPU7X = ((8, 256, 256), "taken as v6e's 256 x 256 MXU: not verified for TPU7x")

# libtpu's HBM buffer assignment (hloscope.analyses.memory.heap), read from the TPU fixtures'
# (fixtures/tpu-v5e-2x2) and benchmarks/tpu_families.py's buffer assignments
_LIBTPU_HEAP = ("tests/analyses/memory/test_heap.py"
                "::test_tpu_estimate_equals_libtpus_buffer_assignment")
GRANULARITY = Figure(
    512, MEASURED, "every HBM heap value's size in the TPU fixtures' buffer assignments is a "
    "multiple of 512 B, tuples included (libtpu sizes buffers in whole tiles)", _LIBTPU_HEAP)
TUPLE_ELEMENT_BYTES = Figure(
    4, MEASURED, "memory_analysis() output bytes: the TPU fixtures' 113-element result tuple 512 "
    "B, a 200-element one 1024 (tests/oracles/tpu_memory_programs.py, many_outputs)",
    "tests/analyses/memory/test_heap_tpu.py::test_estimate_within_two_percent_of_the_buffer"
    "_assignment")
_BUILDS = ("the buffer assignments of the TPU fixtures, the built-in model's cached builds and "
           "benchmarks/tpu_families.py (libtpu 0.0.42.1)")
_SIZES = "tests/analyses/memory/test_tpu_sizes.py"


def _table(granule: int, seen: str) -> Figure:
    return Figure(granule, MEASURED, f"every tuple-shaped HBM value in {_BUILDS} on {seen} "
                  "takes TUPLE_ELEMENT_BYTES per element rounded up to this many bytes",
                  f"{_SIZES}::test_tuple_tables_are_libtpus_sizes")


# a tuple table's size per generation; others (and a program whose target is unknown) take
# GRANULARITY
TUPLE_TABLE_GRANULE: dict[str, Figure] = {
    "v4": _table(512, "v4 (12 programs, 1,148 tables)"),
    "v5e": _table(512, "v5e (38 programs, 9,891 tables)"),
    "v5p": _table(32, "v5p (12 programs, 1,226 tables: 2 to 5 elements 32 B, 9 and 14 64 B, 50 "
                  "224 B)"),
    "v6e": _table(32, "v6e (21 programs, 5,533 tables: 1 to 8 elements 32 B, 9 to 16 64 B, 84 "
                  "352 B)"),
}
UNTILED_TILE_ELEMENTS = Figure(
    1024, MEASURED, f"an HBM scalar without a tile in its layout takes 1024 elements (u32[] and "
    f"s32[] constants 4096 B, bf16[] 2048, pred[] 1024): all 764 in {_BUILDS}; a rank-1 one "
    "too (s32[2]{0:S(4)} 4096 B)", f"{_SIZES}::test_an_untiled_scalar_takes_1024_elements")
SPARSECORE_TABLE_SPACE = Figure(
    7, MEASURED, "a tuple-shaped value made in a computation run on the SparseCore "
    "(execution_thread=\"sparsecore\": an async-start nested in an offloaded scatter) is color 7, "
    "size 0, in every buffer assignment of benchmarks/tpu_families.py's moe_top2 (v5p 2x2x1, 6 "
    "programs); the main thread's async-start of that scatter keeps its table in HBM",
    f"{_SIZES}::test_the_hbm_timeline_is_what_libtpu_holds_at_every_moment")
HBM_ALIGNMENT = Figure(
    16384, MEASURED, "every offset in libtpu's HBM heap (color 0's preallocated-temp allocation) "
    "is a multiple of 16 KiB: the TPU fixtures (v5e) and benchmarks/tpu_families.py (v4, v5p, "
    "v6e, v5e)", f"{_LIBTPU_HEAP}; tests/analyses/oom/test_tpu_fit.py")
HBM_TUPLE_SLOT = Figure(
    16384, MEASURED, "each tuple-shaped value (an async copy's context, a multi-output fusion's "
    "table) holds a 16 KiB slot of its own for the whole program, the last ending at its "
    "512-byte table: the same buffer assignments", f"{_LIBTPU_HEAP}; tests/analyses/oom/"
    "test_tpu_fit.py")

HBM_HEAP_RESERVE = Figure(
    2_686_555_136, MEASURED, "libtpu's HBM heap limit, under which it keeps its primary "
    "packing (best fit in allocation order) and over which it repacks ('Primary algorithm failed "
    "or exceeded limit (A vs L). Running fallback algorithm via lazy replay.', its log's "
    "heap_simulator.h lines), is the usable HBM less the buffer assignment's other HBM "
    "allocations less this: 2,686,510,080 to 2,686,574,592 B on the three llama-1b v5e:2x2 builds "
    "that logged one, 2,688,521,824 on llama-70b v6e:8x16 (docs/memory.md, 'TPU: libtpu's two "
    "packings'; libtpu 0.0.42.1)",
    "tests/analyses/memory/test_tpu_heap_order.py::test_libtpu_keeps_its_primary_packing_under_its"
    "_limit")

# the memory predictor (hloscope.analyses.predict.model): libtpu's behaviour, fitted
REMAT_PERCENT = Figure(
    95, MEASURED, "libtpu's log: 'rematerialization limit 14.93G = 95% hbm (14.96G) - ...' "
    f"(llama-1b / v5e:2x2, libtpu 0.0.42.1; {SQUEEZED})",
    f"{_SQUEEZE_TESTS}::test_the_limit_is_libtpus (within 0.5% of every logged limit)")
SQUEEZE_LANDING = Figure(
    0.99, FIT, f"allocation / limit of the 35 rematerialized programs that fit in {SQUEEZED}: "
    "0.924 to 1.051", f"{_SQUEEZE_TESTS}::test_a_squeezed_allocation_lands_near_the_limit")
DEFERRED_MARGIN = Figure(
    0.035, FIT, f"libtpu's logged need less the predicted one on {SQUEEZED}'s 8 kept-name "
    "llama-1b programs: -3.3% to +2.8% of the limit",
    f"{_SQUEEZE_TESTS}::test_past_the_first_cut_libtpu_recomputes_the_deferred_logits")
OFFLOAD_DEVICE_COPIES = Figure(
    3.0, FIT, "offloaded names' device bytes over `full` plus the device-kept names, in layers "
    "of each: 2.96 to 4.57 on tiny (fixtures/predict) and llama-1b / v5e:2x2",
    "tests/analyses/predict/test_predictor.py::test_offloaded_policies_are_within_the_documented"
    "_bound (within 16%)")
OFFLOAD_FETCHED_LAYERS = Figure(
    1.0, MEASURED, "`hloscope compare` of llama-8b / v5e:4x4 `full` and offloaded names: one "
    "layer of each offloaded name among the backward loop's new buffers at the peak",
    f"{_OFFLOAD_TESTS}::test_llama_8b_offload_within_2_percent")
LOSS_IN_SPAN_BYTES = Figure(
    2**28, FIT, f"the least worst error over {SQUEEZED}'s 77 offloaded programs (0.05 to 1.16 "
    "GiB held, median 0.26 to 0.48 GiB by batch)",
    f"{_OFFLOAD_TESTS}::test_llama_1b_offload_within_8_percent")
