"""Offloading fits only when the hosts can hold it: hand-made figures against the host RAM the
Cloud TPU docs give (v6e: "DRAM per host 1536 GiB", "Chips per host 8"; v5p: "RAM (GB) (4-chip
VM) 448"), and a device without a verified figure (TPU7x), where the fit is not refused."""
from __future__ import annotations

from hloscope.analyses.summary.variant import HostFit, host_fit, pinned_host_bytes, with_host_fit
from hloscope.devices import GIB, get_device
from hloscope.formats.compile_record import MemoryFigures


def test_a_host_that_cannot_hold_the_offloaded_bytes_refuses_the_fit() -> None:
    check = host_fit(get_device("v6e"), 200 * GIB, "test")
    assert isinstance(check, HostFit)
    assert check.devices_per_host == 8 and check.host_memory_bytes == 1536 * GIB
    assert check.bytes_per_host == 1600 * GIB and check.fits is False
    assert check.reason == ("needs 1.56 TiB of pinned host memory per host (200 GiB per device "
                            "x 8 devices), the v6e host has 1.50 TiB")
    assert host_fit(get_device("v6e"), 192 * GIB, "test").fits is True  # exactly 1536 GiB


def test_the_vm_figure_and_its_chips() -> None:
    v5p = host_fit(get_device("v5p"), 112 * 10**9, "test")  # 4 x 112 GB = 448 GB
    assert v5p is not None and v5p.fits is True and v5p.bytes_per_host == 448 * 10**9
    assert host_fit(get_device("v5p"), 112 * 10**9 + 1, "test").fits is False


def test_unknown_host_memory_is_not_checked() -> None:
    check = host_fit(get_device("tpu7x"), 10 * GIB, "test")
    assert check is not None and check.fits is None
    assert check.reason.startswith("pinned host memory not checked: 10.0 GiB per device")
    assert with_host_fit(True, "compiler verdict", check) == (True, "compiler verdict")


def test_nothing_pinned_means_no_check() -> None:
    assert host_fit(get_device("v6e"), 0, "test") is None
    assert host_fit(get_device("v6e"), None, None) is None


def test_pinned_bytes_come_from_memory_analysis_then_the_usage_report() -> None:
    memory = MemoryFigures(argument_bytes=1, output_bytes=1, alias_bytes=0, temp_bytes=1,
                           host_argument_bytes=3 * GIB, host_output_bytes=2 * GIB,
                           host_alias_bytes=2 * GIB, host_temp_bytes=30 * GIB)
    assert pinned_host_bytes(memory, 7) == (33 * GIB, "memory_analysis host allocation")
    no_host = MemoryFigures(argument_bytes=1, output_bytes=1, alias_bytes=0, temp_bytes=1)
    assert pinned_host_bytes(no_host, 5 * GIB) == (
        5 * GIB, "XLA memory-usage report (host memory space)")
    assert pinned_host_bytes(None, None) == (None, None)


def test_the_host_overrules_a_device_fit_but_not_an_oom() -> None:
    too_big = host_fit(get_device("v6e"), 200 * GIB, "test")
    assert with_host_fit(True, "compiler verdict", too_big) == (
        False, "pinned host memory vs the host's RAM")
    oom = (False, "compiler verdict (RESOURCE_EXHAUSTED)")
    assert with_host_fit(*oom, too_big) == oom
    assert with_host_fit(True, "compiler verdict", None) == (True, "compiler verdict")
