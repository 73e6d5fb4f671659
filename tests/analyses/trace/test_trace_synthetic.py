"""Traces built by hand, whose every figure is known in advance: self time of a while loop whose
body ran on two threads, device-style planes (XLA Ops / XLA Modules / Steps lines, two kernels
for one fusion), MFU against a closed form, and the XSpace schema against jaxlib's own."""
from __future__ import annotations

import pytest
from click.testing import CliRunner
from jaxlib_descriptors import jaxlib_descriptors
from xspace_builder import US, PlaneBuilder, XSpaceBuilder

from hloscope.analyses.trace.analysis import analyze_trace
from hloscope.cli.main import cli
from hloscope.devices import get_device
from hloscope.loader.hlo_input import load_input
from hloscope.parsers.trace import parse_xplane
from hloscope.parsers.trace.programs import ProgramIndex, TraceProgram
from hloscope.parsers.trace.xspace_schema import MESSAGES

LOOP_HLO = """HloModule jit_loop, is_scheduled=true

%body (p: (s32[], f32[8])) -> (s32[], f32[8]) {
  %p = (s32[], f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %x = f32[8]{0} get-tuple-element(%p), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one), metadata={op_name="jit(f)/while/body/add"}
  %y = f32[8]{0} exponential(%x), metadata={op_name="jit(f)/while/body/exp"}
  ROOT %t = (s32[], f32[8]{0}) tuple(%next, %y)
}

%cond (q: (s32[], f32[8])) -> pred[] {
  %q = (s32[], f32[8]{0}) parameter(0)
  %j = s32[] get-tuple-element(%q), index=0
  %n = s32[] constant(2)
  ROOT %lt = pred[] compare(%j, %n), direction=LT, metadata={op_name="jit(f)/while/cond/lt"}
}

ENTRY %main (a: f32[8]) -> f32[8] {
  %a = f32[8]{0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[8]{0}) tuple(%zero, %a)
  %loop = (s32[], f32[8]{0}) while(%init), condition=%cond, body=%body,
    backend_config={"known_trip_count":{"n":"2"}}
  %out = f32[8]{0} get-tuple-element(%loop), index=1
  ROOT %neg = f32[8]{0} negate(%out), metadata={op_name="jit(f)/neg"}
}
"""

DOT_HLO = """HloModule jit_mm, is_scheduled=true

%fused (x: bf16[64,256], w: bf16[256,128]) -> bf16[64,128] {
  %x = bf16[64,256]{1,0} parameter(0)
  %w = bf16[256,128]{1,0} parameter(1)
  ROOT %d = bf16[64,128]{1,0} dot(%x, %w), lhs_contracting_dims={1},
    rhs_contracting_dims={0}, metadata={op_name="jit(mm)/dot_general"}
}

ENTRY %main (x: bf16[64,256], w: bf16[256,128]) -> bf16[64,128] {
  %x = bf16[64,256]{1,0} parameter(0)
  %w = bf16[256,128]{1,0} parameter(1)
  ROOT %fusion.1 = bf16[64,128]{1,0} fusion(%x, %w), kind=kOutput, calls=%fused,
    metadata={op_name="jit(mm)/dot_general"}
}
"""


def _host_op(plane: PlaneBuilder, line, name: str, start: float, duration: float) -> None:
    plane.event(line, name, start, duration, hlo_op=name, hlo_module="jit_loop",
                program_id=3, run_id=11)


def _loop_trace() -> bytes:
    """while [0,100) encloses body ops on two threads and the condition; then negate."""
    builder = XSpaceBuilder()
    plane = builder.plane("/host:CPU")
    main, worker = plane.line("tf_XLAEigen/1"), plane.line("tf_XLAEigen/2")
    _host_op(plane, main, "loop", 0, 100)
    _host_op(plane, main, "lt", 2, 3)
    _host_op(plane, main, "next", 10, 20)  # [10, 30)
    _host_op(plane, worker, "y", 20, 30)  # [20, 50): overlaps next
    _host_op(plane, main, "lt", 55, 3)
    _host_op(plane, main, "next", 60, 5)
    _host_op(plane, worker, "y", 62, 10)
    _host_op(plane, main, "lt", 80, 4)
    _host_op(plane, main, "neg", 100, 20)
    plane.event(plane.line("python"), "train", 0, 125, step_num=0)
    return builder.bytes()


def _analyse(data: bytes, hlo: str, program_id: int, device: str | None = "cpu"):
    trace = parse_xplane(data, "<synthetic>")
    module = load_input(hlo)
    index = ProgramIndex([TraceProgram(module.name, program_id, module, "<text>")])
    return trace, analyze_trace(trace, index, get_device(device) if device else None)


def test_self_time_of_a_loop_subtracts_the_union_of_its_body() -> None:
    _, result = _analyse(_loop_trace(), LOOP_HLO, 3)
    self_us = {row.instruction: row.self_us for row in result.by_op}
    # body and condition cover [2,5) [10,50) [55,58) [60,72) [80,84) of [0,100): 62 us
    assert self_us == pytest.approx({"loop": 38, "lt": 10, "next": 25, "y": 40, "neg": 20})
    assert result.op_time_us == pytest.approx(133)
    assert result.step_times_us == pytest.approx([120])  # first start 0, last end 120
    assert result.unmatched_events == 0
    assert result.count_mismatches == []  # lt 3 = trip + 1, next/y 2 = trip, loop/neg 1
    counts = {row.instruction: (row.events, row.executions_per_step) for row in result.by_op}
    assert counts == {"loop": (1, 1), "lt": (3, 3), "next": (2, 2), "y": (2, 2),
                      "neg": (1, 1)}


def test_cpu_has_no_peak_so_no_mfu() -> None:
    _, result = _analyse(_loop_trace(), LOOP_HLO, 3)
    assert result.mfu is None and result.hfu is None
    assert "no published peak" in result.mfu_note
    assert result.achieved_flops_per_s is not None


def _device_trace() -> bytes:
    """A TPU-style plane: one module run [0,200), fusion.1 as two kernels, a Steps line."""
    builder = XSpaceBuilder()
    plane = builder.plane("/device:TPU:0")
    modules, ops, steps = plane.line("XLA Modules"), plane.line("XLA Ops"), plane.line("Steps")
    plane.event(modules, "jit_mm(7)", 0, 200, run_id=5)
    plane.event(ops, "fusion.1", 10, 30)
    plane.event(ops, "fusion.1", 50, 10)
    plane.event(steps, "0", 0, 210, step_num=0)
    builder.plane("/host:CPU").line("python")
    return builder.bytes()


def test_device_planes_kernels_and_steps() -> None:
    trace, result = _analyse(_device_trace(), DOT_HLO, 7, device="v5e")
    assert trace.device_planes == ["/device:TPU:0"]
    assert [(s.number, s.duration_ps) for s in trace.steps] == [(0, 210 * US)]
    assert [(e.program_id, e.run_id, e.module) for e in trace.events] == [(7, 5, "jit_mm")] * 2
    (op,) = result.by_op
    assert (op.instruction, op.events, op.self_us) == ("fusion.1", 2, pytest.approx(40))
    assert result.count_mismatches == []  # two kernels of one fusion: a multiple of 1 per run
    flops = 2 * 64 * 128 * 256  # one dot: 2 M N K
    assert result.flops_per_step == flops
    step_s = 50e-6  # the run's ops span [10, 60) us
    peak = get_device("v5e").peak_flops.bf16
    assert result.mfu == pytest.approx(flops / step_s / peak)
    assert result.hfu == pytest.approx(result.mfu)  # nothing recomputed


def test_device_trace_without_a_known_device_has_no_mfu() -> None:
    _, result = _analyse(_device_trace(), DOT_HLO, 7, device=None)
    assert result.mfu is None and "not known" in result.mfu_note


def test_cli_errors_have_distinct_exit_codes(tmp_path) -> None:
    runner = CliRunner()
    missing = runner.invoke(cli, ["trace", str(tmp_path / "absent.xplane.pb")])
    assert missing.exit_code == 3 and "Traceback" not in missing.output
    garbled = tmp_path / "garbled.xplane.pb"
    garbled.write_bytes(b"\x0a\xff\xff\xff\xff\x0f garbage")
    result = runner.invoke(cli, ["trace", str(garbled)])
    assert result.exit_code == 4 and "XSpace" in result.output
    bad_json = tmp_path / "bad.trace.json"
    bad_json.write_text('{"traceEvents": [')
    assert runner.invoke(cli, ["trace", str(bad_json)]).exit_code == 4
    empty = tmp_path / "empty"
    empty.mkdir()
    assert runner.invoke(cli, ["trace", str(empty)]).exit_code == 3


def test_xspace_schema_is_xplane_protos() -> None:
    theirs = jaxlib_descriptors(("tsl/profiler/protobuf/xplane.proto",))
    for message, fields in MESSAGES.items():
        assert message in theirs, message
        by_name = {f.name: f for f in theirs[message].field}
        for field, number, kind, label, _ in fields:
            assert (by_name[field].number, by_name[field].type, by_name[field].label) == \
                (number, kind, label), f"{message}.{field}"
