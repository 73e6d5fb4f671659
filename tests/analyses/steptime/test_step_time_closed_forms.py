"""The per-op step model on hand-built modules, each checked against its closed form from the
device's datasheet figures and the calibration table (hloscope/analyses/steptime)."""
from __future__ import annotations

import pytest

from hloscope.analyses.cost import CostAnalysis
from hloscope.analyses.steptime import step_time
from hloscope.analyses.steptime.calibration import CALIBRATIONS, PCIE_PAYLOAD_EFFICIENCY
from hloscope.analyses.steptime.ops import shape_efficiency
from hloscope.devices import get_device
from hloscope.parsers.text import parse_text

H100, V5E = get_device("h100"), get_device("v5e")
H100_MATMUL = 989.4e12 * CALIBRATIONS["h100"].matmul_efficiency.value
H100_MEMORY = 3.35e12 * CALIBRATIONS["h100"].memory_efficiency.value
V5E_MATMUL = 197e12 * CALIBRATIONS["v5e"].matmul_efficiency.value
V5E_MEMORY = 819e9 * CALIBRATIONS["v5e"].memory_efficiency.value
V5E_OP = CALIBRATIONS["v5e"].op_overhead.value
V5E_HOP = CALIBRATIONS["v5e"].hop_latency.value


def module(body: str, header: str = "", computations: str = ""):
    return parse_text(f"HloModule m, is_scheduled=true{header}\n\n{computations}\n"
                      f"ENTRY main {{\n{body}\n}}\n")[0]


def dot_line(name: str, m: int, k: int, n: int, lhs: str, rhs: str) -> str:
    return (f"  {name} = bf16[{m},{n}]{{1,0}} dot({lhs}, {rhs}), lhs_contracting_dims={{1}}, "
            "rhs_contracting_dims={0}")


def test_a_large_gpu_matmul_runs_at_the_calibrated_matmul_rate() -> None:
    program = module("\n".join([
        "  a = bf16[4096,4096]{1,0} parameter(0)", "  b = bf16[4096,4096]{1,0} parameter(1)",
        "  ROOT d" + dot_line("", 4096, 4096, 4096, "a", "b")[3:]]))
    timed = step_time(program, H100)
    flops = 2 * 4096**3
    assert timed is not None and timed.dominant == "compute (matmul)"
    assert timed.seconds == pytest.approx(1e-6 + flops / H100_MATMUL, rel=1e-9)
    [op] = timed.ops
    assert op.flops == flops and op.executions == 1


def test_tpu_matmul_dimensions_are_padded_to_the_mxu() -> None:
    program = module("\n".join([
        "  a = bf16[65536,1000]{1,0} parameter(0)", "  b = bf16[1000,100]{1,0} parameter(1)",
        "  ROOT d" + dot_line("", 65536, 1000, 100, "a", "b")[3:]]))
    dot = program.entry.instructions[-1]
    efficiency = shape_efficiency(CostAnalysis(program), program.entry_name, dot, (8, 128, 128))
    assert efficiency == pytest.approx(1000 * 100 / (1024 * 128))
    timed = step_time(program, V5E)
    flops = 2 * 65536 * 1000 * 100
    bytes_accessed = 2 * (65536 * 1000 + 1000 * 100 + 65536 * 100)
    expected = V5E_OP + max(flops / (V5E_MATMUL * efficiency), bytes_accessed / V5E_MEMORY)
    assert timed is not None and timed.seconds == pytest.approx(expected, rel=1e-9)


def _overlap_program(dot_size: int, asynchronous: bool):
    gather = ("  ags = (bf16[1024,4096]{1,0}, bf16[4096,4096]{1,0}) all-gather-start(p), "
              "channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}, "
              "use_global_device_ids=true") if asynchronous else \
        ("  agd = bf16[4096,4096]{1,0} all-gather(p), channel_id=1, "
         "replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true")
    lines = ["  p = bf16[1024,4096]{1,0} parameter(0)",
             f"  a = bf16[{dot_size},{dot_size}]{{1,0}} parameter(1)",
             f"  b = bf16[{dot_size},{dot_size}]{{1,0}} parameter(2)", gather,
             dot_line("d", dot_size, dot_size, dot_size, "a", "b")]
    if asynchronous:
        lines.append("  agd = bf16[4096,4096]{1,0} all-gather-done(ags)")
    lines.append(f"  ROOT t = (bf16[{dot_size},{dot_size}]{{1,0}}, bf16[4096,4096]{{1,0}}) "
                 "tuple(d, agd)")
    return module("\n".join(lines), header=", num_partitions=4")


def _gather_seconds() -> float:
    """Ring all-gather of a 32 MiB result over 4 chips of a 2x2 v5e torus: 3 steps, 3/4 of
    the payload on the wire, the group spanning both torus axes (half of 400 GB/s)."""
    return V5E_OP + 3 * V5E_HOP + 0.75 * 4096 * 4096 * 2 / (400e9 * 2 / 4)


def _dot_seconds(size: int) -> float:
    return V5E_OP + max(2 * size**3 / V5E_MATMUL, 3 * size * size * 2 / V5E_MEMORY)


def test_an_async_collective_hides_behind_compute_until_its_done() -> None:
    hidden = step_time(_overlap_program(8192, True), V5E, torus=(2, 2))
    assert hidden is not None and hidden.seconds == pytest.approx(_dot_seconds(8192), rel=1e-9)
    assert hidden.exposed_by_link == {}
    assert hidden.link_busy_seconds["ici"] == pytest.approx(_gather_seconds(), rel=1e-9)
    exposed = step_time(_overlap_program(1024, True), V5E, torus=(2, 2))
    assert exposed is not None and exposed.seconds == pytest.approx(_gather_seconds(), rel=1e-9)
    assert exposed.exposed_by_link["ici"] == pytest.approx(
        _gather_seconds() - _dot_seconds(1024), rel=1e-9)


def test_a_synchronous_collective_is_exposed_whole() -> None:
    timed = step_time(_overlap_program(1024, False), V5E, torus=(2, 2))
    assert timed is not None
    assert timed.seconds == pytest.approx(_gather_seconds() + _dot_seconds(1024), rel=1e-9)
    assert timed.exposed_by_link["ici"] == pytest.approx(_gather_seconds(), rel=1e-9)


LOOP = """
body {
  p = (s32[], bf16[1024,1024]{1,0}) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = bf16[1024,1024]{1,0} get-tuple-element(p), index=1
  d = bf16[1024,1024]{1,0} dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  one = s32[] constant(1)
  n = s32[] add(i, one)
  ROOT r = (s32[], bf16[1024,1024]{1,0}) tuple(n, d)
}

cond {
  p = (s32[], bf16[1024,1024]{1,0}) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  four = s32[] constant(4)
  ROOT c = pred[] compare(i, four), direction=LT
}
"""


def test_a_loop_body_counts_once_per_trip() -> None:
    program = module("\n".join([
        "  x = bf16[1024,1024]{1,0} parameter(0)", "  zero = s32[] constant(0)",
        "  t = (s32[], bf16[1024,1024]{1,0}) tuple(zero, x)",
        "  w = (s32[], bf16[1024,1024]{1,0}) while(t), condition=cond, body=body, "
        'backend_config={"known_trip_count":{"n":"4"}}',
        "  ROOT o = bf16[1024,1024]{1,0} get-tuple-element(w), index=1"]), computations=LOOP)
    timed = step_time(program, V5E)
    assert timed is not None
    runs = {op.name: op.executions for op in timed.ops}
    assert runs == {"d": 4, "n": 4, "c": 5}
    seconds = {op.name: op.seconds for op in timed.ops}
    assert seconds["d"] == pytest.approx(_dot_seconds(1024), rel=1e-9)
    assert timed.seconds == pytest.approx(4 * (seconds["d"] + seconds["n"]) + 5 * seconds["c"],
                                          rel=1e-12)


def test_a_host_copy_waited_for_at_once_costs_its_bytes_over_the_pcie_payload_rate() -> None:
    program = module("\n".join([
        "  p = bf16[8192,8192]{1,0} parameter(0)",
        "  cs = (bf16[8192,8192]{1,0:S(5)}, bf16[8192,8192]{1,0}, u32[]) copy-start(p)",
        "  ROOT cd = bf16[8192,8192]{1,0:S(5)} copy-done(cs)"]))
    timed = step_time(program, H100)
    rate = 128e9 / 2 * PCIE_PAYLOAD_EFFICIENCY  # H100 datasheet: PCIe Gen5 128 GB/s both ways
    moved = 8192 * 8192 * 2
    assert timed is not None and timed.host_link_bytes_per_second == pytest.approx(rate)
    assert timed.exposed_by_link["host_out"] == pytest.approx(moved / rate, rel=1e-9)
    assert timed.seconds_without_host == pytest.approx(0.0, abs=1e-6)
    # T(h) = moved / h: the link at which the step takes 1 ms is moved / 1 ms
    assert timed.host_link_needed(1e-3) == pytest.approx(moved / 1e-3, rel=1e-6)


def test_the_cpu_has_no_calibration() -> None:
    program = module("  ROOT a = f32[4]{0} parameter(0)")
    assert step_time(program, get_device("cpu")) is None
