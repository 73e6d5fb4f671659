"""The step estimate against closed forms: amounts chosen as whole multiples of a device's
published figures, so each term and both bounds are exact seconds.

Per-device rates (from the vendor figures in hloscope.devices, not from the code under test):
v6e: 918e12 FLOP/s bf16, 1640e9 B/s HBM, ICI 800e9 B/s per chip both ways -> 400e9 one way,
DCN 4 x 200 Gbps per 8-chip host -> 100e9 / 8 = 12.5e9 B/s; H100: 989.4e12 FLOP/s, NVLink 900e9
both ways -> 450e9, PCIe 128e9 both ways -> 64e9; TPU7x: two devices per chip, so ICI 1200e9 / 2
/ 2 = 300e9 and DCN 12.5e9 / 2 = 6.25e9 per device.
"""
from __future__ import annotations

import pytest

from hloscope.analyses.roofline import estimate_step
from hloscope.devices import get_device

V6E_PEAK, V6E_HBM, V6E_ICI, V6E_DCN = 918e12, 1640e9, 400e9, 12.5e9


def test_each_term_and_both_bounds_on_v6e() -> None:
    step = estimate_step(get_device("v6e"), "bfloat16", 0.5 * V6E_PEAK, 0.2 * V6E_HBM,
                         collective_bytes=0, ici_bytes=0.1 * V6E_ICI, dcn_bytes=0.3 * V6E_DCN,
                         num_slices=4)
    assert step.compute_seconds == pytest.approx(0.5)
    assert step.memory_seconds == pytest.approx(0.2)
    assert step.ici_seconds == pytest.approx(0.1)
    assert step.dcn_seconds == pytest.approx(0.3)
    assert step.collective_seconds == pytest.approx(0.4)
    assert step.serial_seconds == pytest.approx(0.5 + 0.1 + 0.3)  # max(compute, HBM) + links
    assert step.overlapped_seconds == pytest.approx(0.5)  # the largest term
    assert step.seconds == step.serial_seconds and step.missing == ()
    assert step.bound == "compute" and step.dominant == "compute"


def test_a_slow_link_dominates_the_overlapped_bound() -> None:
    step = estimate_step(get_device("v6e"), "bfloat16", 1e12, 0, collective_bytes=0,
                         ici_bytes=0, dcn_bytes=2 * V6E_DCN, num_slices=2)
    assert step.overlapped_seconds == pytest.approx(2.0) and step.dominant == "dcn"
    assert step.serial_seconds == pytest.approx(1e12 / V6E_PEAK + 2.0)


def test_host_link_and_nvlink_on_h100() -> None:
    step = estimate_step(get_device("h100"), "bfloat16", 989.4e12, 0, 900e9,
                         to_host_bytes=3 * 64e9, from_host_bytes=64e9, ici_bytes=900e9,
                         dcn_bytes=0)
    assert (step.compute_seconds, step.ici_seconds, step.offload_seconds) == pytest.approx(
        (1.0, 2.0, 3.0))  # the larger host direction counts
    assert step.serial_seconds == pytest.approx(6.0)
    assert step.overlapped_seconds == pytest.approx(3.0) and step.dominant == "host"


def test_two_devices_per_chip_share_its_links() -> None:
    step = estimate_step(get_device("tpu7x"), "bfloat16", 0, 0, 0, ici_bytes=300e9,
                         dcn_bytes=6.25e9, num_slices=2)
    assert step.ici_seconds == pytest.approx(1.0) and step.dcn_seconds == pytest.approx(1.0)


def test_unknown_figures_make_both_bounds_lower_bounds() -> None:
    # v6e publishes no host-link bandwidth: the host term is left out and named
    step = estimate_step(get_device("v6e"), "bfloat16", V6E_PEAK, 0, 0, to_host_bytes=10**12,
                         ici_bytes=0, dcn_bytes=0)
    assert step.missing == ("host-link bandwidth",) and step.is_lower_bound
    assert step.offload_seconds is None
    assert step.serial_seconds == step.overlapped_seconds == pytest.approx(1.0)


def test_without_the_link_split_collectives_count_as_ici() -> None:
    one_slice = estimate_step(get_device("v6e"), "bfloat16", 0, 0, V6E_ICI)
    assert one_slice.collective_seconds == pytest.approx(1.0) and not one_slice.missing
    assert one_slice.serial_seconds == one_slice.overlapped_seconds == pytest.approx(1.0)
    slices = estimate_step(get_device("v6e"), "bfloat16", 0, 0, V6E_ICI, num_slices=4)
    assert slices.ici_seconds == pytest.approx(1.0) and slices.dcn_seconds == 0
    assert slices.missing == ("which collectives cross slices (all counted as ICI)",)
    unknown = estimate_step(get_device("v6e"), "bfloat16", 0, 0, 3 * V6E_ICI,
                            ici_bytes=V6E_ICI, dcn_bytes=0, unknown_link_bytes=2 * V6E_ICI)
    assert unknown.ici_seconds == pytest.approx(3.0) and unknown.is_lower_bound


def test_json_keeps_the_old_keys_and_adds_the_bounds() -> None:
    data = estimate_step(get_device("v5e"), "bfloat16", 197e12, 0, 0).to_dict()
    for key in ("compute_seconds", "memory_seconds", "collective_seconds", "offload_seconds",
                "missing", "seconds", "bound"):
        assert key in data
    assert data["serial_seconds"] == data["overlapped_seconds"] == pytest.approx(1.0)
    assert data["dominant"] == "compute" and data["dcn_seconds"] == 0
