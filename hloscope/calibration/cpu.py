"""The CPU figures: none fitted. The step-time model's CPU rates are measured on the machine at
run time (`hloscope.workloads.cpu_probe`), so what they reach is the rate: efficiencies are 1."""
from __future__ import annotations

from hloscope.calibration.figure import MEASURED, XLA, Figure

NO_COLLECTIVES = Figure(0.0, MEASURED, "one device: no collectives")
NO_HOST_LINK = Figure(float("inf"), MEASURED, "the CPU has no host link: its memory is the host's")
MATMUL_TILE = ((1, 1, 1), "no matmul unit tile on a CPU")
_HEAP_TESTS = "tests/analyses/memory/test_heap.py"
HEAP_ALIGNMENT = Figure(
    64, XLA, "cpu_function_runtime::MinAlign() = 64 (XLA of jax 0.10.2): every preallocated-temp "
    "offset in the CPU fixtures' buffer assignments (fixtures/cpu) is a multiple of it",
    f"{_HEAP_TESTS}::test_chunks_start_at_the_backends_alignment, "
    f"{_HEAP_TESTS}::test_estimate_is_within_two_percent_of_memory_analysis")


def reached(source: str) -> Figure:
    """An efficiency of 1: the rates `source` measured are reached rates."""
    return Figure(1.0, MEASURED, f"{source}: the measured rates are reached rates")
