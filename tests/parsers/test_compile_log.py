"""XLA's OOM messages and capacities: hand-written messages in the forms XLA prints."""
from __future__ import annotations

import pytest

from hloscope.analyses.oom.capacity import device_capacity, resolve_capacity
from hloscope.devices import GIB, JAX_DEFAULT_GPU_MEMORY_FRACTION, get_device
from hloscope.errors import UsageError
from hloscope.parsers.compile_log import parse_compile_log

TPU_SHORT = ("jaxlib._jax.XlaRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory on HBM, the "
             "total memory required for HLO temporaries (28.68G) exceeds available HBM "
             "(15.75G).")
TPU_LONG = ("RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory "
            "space hbm. Used 20.25G of 15.48G hbm. Exceeded hbm capacity by 4.77G.")
REMAT = ("W0101 external/xla/xla/hlo/transforms/simplifiers/hlo_rematerialization.cc:3005] "
         "Can't reduce memory use below 59.62GiB (64017761484 bytes) by rematerialization; "
         "only reduced to 71.21GiB (76461187072 bytes), down from 80.00GiB (85899345920 bytes) "
         "originally")
ALLOCATE = ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while "
            "trying to allocate 34359738368 bytes.")
BFC = ("W bfc_allocator.cc:479] Allocator (GPU_0_bfc) ran out of memory trying to allocate "
       "2.00GiB (rounded to 2147483648)requested by op")


def test_tpu_one_line_verdict_in_binary_units() -> None:
    log = parse_compile_log("I0000 noise\n" + TPU_SHORT + "\n")
    verdict = log.compile_verdict
    assert verdict is not None and verdict.line == 2
    assert verdict.required_bytes == round(28.68 * GIB)
    assert verdict.available_bytes == round(15.75 * GIB) == log.available_bytes
    assert verdict.memory_space == "hbm"
    assert verdict.excess_bytes == round(28.68 * GIB) - round(15.75 * GIB)


def test_tpu_memory_space_form() -> None:
    verdict = parse_compile_log(TPU_LONG).compile_verdict
    assert verdict is not None
    assert (verdict.required_bytes, verdict.available_bytes) == (round(20.25 * GIB),
                                                                 round(15.48 * GIB))


def test_remat_warning_prefers_exact_byte_counts() -> None:
    message = parse_compile_log(REMAT).first("remat-warning")
    assert message is not None
    assert message.available_bytes == 64017761484
    assert message.required_bytes == 76461187072
    assert message.original_bytes == 85899345920
    assert parse_compile_log(REMAT).compile_verdict is None  # a warning, not a verdict


def test_remat_warning_without_original() -> None:
    text = ("Can't reduce memory use below 1.00GiB (1073741824 bytes) by rematerialization; "
            "only reduced to 2.00GiB (2147483648 bytes)")
    message = parse_compile_log(text).first("remat-warning")
    assert message is not None and message.original_bytes is None
    assert message.required_bytes == 2 * GIB


def test_allocation_failures() -> None:
    log = parse_compile_log(ALLOCATE + "\n" + BFC + "\nOut of memory while trying to allocate "
                            "12.00GiB.")
    assert [m.required_bytes for m in log.messages] == [34359738368, 2147483648, 12 * GIB]
    assert all(m.kind == "allocation" for m in log.messages)


def test_free_text_yields_nothing() -> None:
    assert parse_compile_log("compiled fine\nno memory trouble").messages == ()


def test_gpu_capacity_takes_jax_share_and_says_so() -> None:
    h100 = get_device("h100")
    capacity = device_capacity(h100)
    assert capacity is not None
    assert capacity.bytes == int(h100.usable_memory_bytes * JAX_DEFAULT_GPU_MEMORY_FRACTION)
    assert "75%" in capacity.note and "workspaces" in capacity.note


def test_capacity_precedence() -> None:
    log = parse_compile_log(TPU_SHORT)
    assert resolve_capacity(16 * GIB, "v5e", log, "v6e").bytes == 16 * GIB
    assert resolve_capacity(None, "v6e", log, "v5e").bytes == round(31.25 * GIB)
    assert resolve_capacity(None, None, log, "v6e").bytes == round(15.75 * GIB)
    assert resolve_capacity(None, None, None, "v5p").bytes == round(95.74 * GIB)
    assert resolve_capacity(None, None, None, None) is None
    with pytest.raises(UsageError):
        resolve_capacity(None, "v99", None, None)
