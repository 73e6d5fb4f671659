"""Ranking with the two step bounds and the host-memory check, on hand-made figures (v6e: 918e12
FLOP/s, ICI 400e9 B/s one way per device; see tests/analyses/test_roofline.py)."""
from __future__ import annotations

from hloscope.analyses.roofline import estimate_step
from hloscope.analyses.summary.variant import HloFigures, VariantFigures, host_fit
from hloscope.devices import GIB, get_device
from hloscope.sweeps.ranking import rank_variants

PEAK, ICI = 918e12, 400e9


def figures(name: str, compute_s: float, ici_s: float, pinned: int = 0,
            device: str = "v6e") -> VariantFigures:
    flops = int(compute_s * PEAK)
    hlo = HloFigures(total_flops=flops, bytes_accessed=0, collective_bytes=int(ici_s * ICI),
                     forward_flops=flops, recompute_flops=0, recompute_overhead=0.0,
                     to_host_bytes=0, from_host_bytes=0, unknown_loops=0, parameter_bytes=0,
                     live_peak_bytes=None, dcn_collective_bytes=0,
                     ici_collective_bytes=int(ici_s * ICI))
    step = estimate_step(get_device("v6e"), "bfloat16", flops, 0, hlo.collective_bytes,
                         ici_bytes=hlo.ici_collective_bytes, dcn_bytes=0)
    host = host_fit(get_device(device), pinned, "test")
    fits = host is None or host.fits is not False
    return VariantFigures(variant=name, status="ok", batch=8, tokens=8 * 4096, fits=fits,
                          fit_source="test", capacity_bytes=100, required_bytes=50,
                          required_source="test", host_temp_bytes=pinned, compile_seconds=1.0,
                          xla_flops=None, hlo=hlo, step=step, fingerprint=name, error=None,
                          host_fit=host)


def test_the_overlapped_bound_ranks_and_the_serial_one_is_named() -> None:
    # a: 1.0 s compute + 0.9 s ICI (overlapped 1.0, serial 1.9); b: 1.2 s compute, no ICI
    a, b = figures("a", 1.0, 0.9), figures("b", 1.2, 0.0)
    assert a.step_seconds == 1.0 and round(a.serial_step_seconds, 9) == 1.9
    winner, verdicts = rank_variants([a, b])
    assert winner == "a"
    assert "without overlap (serial bound) b would be faster" in verdicts["a"].reason
    assert verdicts["b"].outcome == "slower" and "-16.7%" in verdicts["b"].reason


def test_a_variant_whose_host_cannot_hold_its_offload_does_not_fit() -> None:
    offload = figures("offload", 1.0, 0.0, pinned=200 * GIB)  # 1600 GiB on a 1536 GiB host
    full = figures("full", 1.3, 0.0)
    winner, verdicts = rank_variants([offload, full])
    assert winner == "full" and verdicts["offload"].outcome == "does not fit"
    assert verdicts["offload"].reason == (
        "does not fit at batch 8: needs 1.56 TiB of pinned host memory per host (200 GiB per "
        "device x 8 devices), the v6e host has 1.50 TiB")


def test_an_unchecked_host_is_said_in_the_reason() -> None:
    offload = figures("offload", 1.0, 0.0, pinned=10 * GIB, device="tpu7x")
    winner, verdicts = rank_variants([offload])
    assert winner == "offload"
    assert "pinned host memory not checked" in verdicts["offload"].reason


def timed(name: str, seconds: float, without_host: float | None = None) -> VariantFigures:
    """Figures whose per-op step is `seconds` (`without_host`: the same step with a free host
    link, for a variant that offloads) on an h100 whose host link runs 50 GB/s each way."""
    from dataclasses import replace

    from hloscope.analyses.steptime import HOST_LADDER
    from hloscope.analyses.steptime.result import StepTime

    curve: tuple[tuple[float, float], ...] = ()
    if without_host is not None:  # its host time inversely proportional to the link
        curve = tuple((50e9 * k, without_host + (seconds - without_host) / k)
                      for k in HOST_LADDER)
    step = StepTime(device="h100", seconds=seconds, compute_seconds={"memory": seconds},
                    phase_compute_seconds={}, exposed_seconds={}, link_busy_seconds={},
                    host_link_bytes_per_second=50e9, host_link_source="test",
                    seconds_without_host=without_host, host_curve=curve,
                    calibration={"host_link": {"kind": "datasheet"}})
    return replace(figures(name, 1.0, 0.0), step_time=step)


def test_the_per_op_step_ranks_where_the_device_has_a_calibration() -> None:
    # the roofline puts both at 1.0 s; the per-op model does not
    a, b = timed("a", 0.8), timed("b", 0.7)
    winner, verdicts = rank_variants([a, b])
    assert winner == "b" and verdicts["b"].reason.startswith("fastest that fits; step 0.700 s")
    assert "without overlap" not in verdicts["b"].reason
    assert verdicts["a"].outcome == "slower" and "-12.5%" in verdicts["a"].reason


def test_an_offload_row_says_which_host_link_it_needs_to_win() -> None:
    # 0.9 s with 0.3 s waiting on the host at 50 GB/s: equal to full's 0.8 s at 75 GB/s
    offload, full = timed("offload", 0.9, without_host=0.6), timed("full", 0.8)
    winner, verdicts = rank_variants([offload, full])
    assert winner == "full" and verdicts["full"].host_link_line is None
    assert verdicts["offload"].host_link_line == (
        "offload beats full while the host link is at least 75 GB/s per device each way; at "
        "the datasheet 50 GB/s its step is 12.5% longer than full's")
    hidden = timed("hidden", 0.7, without_host=0.7)  # transfers hidden at every link tried
    _, verdicts = rank_variants([hidden, full])
    assert verdicts["hidden"].host_link_line.startswith(
        "hidden beats full while any host link down to 0.0488 GB/s per device each way")
    hopeless = timed("hopeless", 0.95, without_host=0.85)
    _, verdicts = rank_variants([hopeless, full])
    assert verdicts["hopeless"].host_link_line.startswith(
        "hopeless: slower than full whatever the host link")
