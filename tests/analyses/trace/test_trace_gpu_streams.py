"""Raw GPU traces built by hand (CUPTI stream lines, no "XLA Ops" line), as jax.profiler writes
them on an NVIDIA GPU: kernels named after their instruction with '.' made '_', cuBLAS kernels
that name none, and `hlo_op` naming either the instruction or the CUDA graph (command buffer)
the kernel ran in. Every figure is a closed form of the events below."""
from __future__ import annotations

import pytest
from xspace_builder import US, XSpaceBuilder

from hloscope.analyses.trace.analysis import analyze_trace
from hloscope.analyses.trace.export import chrome_trace
from hloscope.analyses.trace.join import IN_COMMAND_BUFFERS, NAMES_NO_INSTRUCTION, join_events
from hloscope.devices import get_device
from hloscope.loader.hlo_input import load_input
from hloscope.model.trace import OpEvent
from hloscope.parsers.trace import parse_xplane
from hloscope.parsers.trace.programs import ProgramIndex, TraceProgram
from hloscope.reports.trace import trace_report

GPU_HLO = """HloModule jit_gpu, is_scheduled=true

%fused_transpose (p: f32[64,32]) -> f32[32,64] {
  %p = f32[64,32]{1,0} parameter(0)
  ROOT %t = f32[32,64]{1,0} transpose(%p), dimensions={1,0}
}

%fused_dot (x: bf16[64,256], w: bf16[256,128]) -> bf16[64,128] {
  %x = bf16[64,256]{1,0} parameter(0)
  %w = bf16[256,128]{1,0} parameter(1)
  ROOT %d = bf16[64,128]{1,0} dot(%x, %w), lhs_contracting_dims={1},
    rhs_contracting_dims={0}, metadata={op_name="jit(f)/dot_general"}
}

%fused_copy (q: f32[32,64]) -> f32[32,64] {
  %q = f32[32,64]{1,0} parameter(0)
  ROOT %c = f32[32,64]{1,0} copy(%q)
}

ENTRY %main (x: bf16[64,256], w: bf16[256,128], t: f32[64,32]) -> (f32[32,64], bf16[64,128],
    bf16[64,128], f32[32,64], f32[32,64], f32[32,64]) {
  %x = bf16[64,256]{1,0} parameter(0)
  %w = bf16[256,128]{1,0} parameter(1)
  %t = f32[64,32]{1,0} parameter(2)
  %input_transpose_fusion.11 = f32[32,64]{1,0} fusion(%t), kind=kInput,
    calls=%fused_transpose, metadata={op_name="jit(f)/transpose"}
  %gemm_fusion_dot.72 = bf16[64,128]{1,0} fusion(%x, %w), kind=kCustom, calls=%fused_dot,
    metadata={op_name="jit(f)/dot_general"}
  %custom-call.3 = (bf16[64,128]{1,0}, s8[1024]{0}) custom-call(%x, %w),
    custom_call_target="__cublas$lt$matmul", metadata={op_name="jit(f)/dot_general"},
    backend_config={"gemm_backend_config":{"dot_dimension_numbers":{
      "lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["0"],
      "lhs_batch_dimensions":[],"rhs_batch_dimensions":[]}}}
  %get-tuple-element.1 = bf16[64,128]{1,0} get-tuple-element(%custom-call.3), index=0
  %loop_gather_fusion = f32[32,64]{1,0} fusion(%input_transpose_fusion.11), kind=kLoop,
    calls=%fused_copy, metadata={op_name="jit(f)/gather"}
  %copy.1 = f32[32,64]{1,0} copy(%loop_gather_fusion)
  %copy-1 = f32[32,64]{1,0} copy(%loop_gather_fusion)
  ROOT %out = (f32[32,64]{1,0}, bf16[64,128]{1,0}, bf16[64,128]{1,0}, f32[32,64]{1,0},
    f32[32,64]{1,0}, f32[32,64]{1,0}) tuple(%input_transpose_fusion.11, %gemm_fusion_dot.72,
    %get-tuple-element.1, %loop_gather_fusion, %copy.1, %copy-1)
}
"""

DOT_FLOPS = 2 * 64 * 128 * 256  # one [64,256] x [256,128] product: 2 M N K
COMPUTE, D2H = "Stream #14(Compute,Memset)", "Stream #18(MemcpyD2H)"
PROGRAM = {"hlo_module": "jit_gpu", "program_id": 0}

# (kernel, hlo_op without command buffers, start in the step, duration) in µs; steps 100 µs apart
KERNELS = [
    ("Memset 0", "custom-call.3", 5, 1),
    ("input_transpose_fusion_11", "input_transpose_fusion.11", 10, 5),
    ("gemm_fusion_dot_72", "gemm_fusion_dot.72", 20, 30),
    ("nvjet_sm90_tst_128x160_64x5_2x1_v_bz_NNT", "custom-call.3", 55, 20),
    ("loop_gather_fusion", "loop_gather_fusion", 80, 4),
]
STEPS = 2


def _gpu_trace(command_buffers: bool) -> bytes:
    """Two steps of KERNELS on one compute stream, a result copy on a D2H stream after them
    (no program stats, as PjRt's transfers), and the steps' StepTraceAnnotations."""
    builder = XSpaceBuilder()
    device = builder.plane("/device:GPU:0")
    compute, d2h = device.line(COMPUTE), device.line(D2H)
    for step in range(STEPS):
        for kernel, instruction, start, duration in KERNELS:
            hlo_op = "command_buffer_105" if command_buffers else instruction
            device.event(compute, kernel, 100 * step + start, duration, hlo_op=hlo_op,
                         tf_op="XlaModule:", correlation_id=step + 1, **PROGRAM)
        device.event(d2h, "MemcpyD2H", 100 * step + 90, 2, correlation_id=step + 1)
    host = builder.plane("/host:CPU")
    python = host.line("python3")
    for step in range(STEPS):
        host.event(python, "train", 100 * step, 99, step_num=step)
    return builder.bytes()


def _analyse(command_buffers: bool):
    trace = parse_xplane(_gpu_trace(command_buffers), "<gpu>")
    module = load_input(GPU_HLO)
    index = ProgramIndex([TraceProgram(module.name, 0, module, "<text>")])
    return trace, analyze_trace(trace, index, get_device("h100"))


def test_stream_lines_are_op_events_named_by_kernel_inside_command_buffers() -> None:
    trace, _ = _analyse(command_buffers=True)
    assert trace.device_planes == ["/device:GPU:0"]
    assert [(s.number, s.start_ps) for s in trace.steps] == [(0, 0), (1, 100 * US)]
    first_step = [(e.name, e.command_buffer, e.line) for e in trace.events[:6]]
    assert first_step == [(kernel, "command_buffer_105", COMPUTE) for kernel, *_ in KERNELS] \
        + [("MemcpyD2H", "", D2H)]
    assert {(e.module, e.program_id, e.run_id) for e in trace.events if e.line == COMPUTE} == \
        {("jit_gpu", 0, None)}
    copy = trace.events[5]
    assert (copy.module, copy.program_id, copy.duration_ps) == ("", None, 2 * US)


def assert_rows(found: dict[str, tuple[int, float]],
                expected: dict[str, tuple[int, float]]) -> None:
    """The same ops, each (events, self µs) equal (pytest.approx takes no nested dicts)."""
    assert found.keys() == expected.keys()
    for op, (events, self_us) in expected.items():
        assert found[op][0] == events and found[op][1] == pytest.approx(self_us), op


def test_sanitized_kernel_names_join_and_library_kernels_are_counted_not_dropped() -> None:
    _, result = _analyse(command_buffers=True)
    per_op = {row.instruction: (row.events, row.self_us) for row in result.by_op}
    assert_rows(per_op, {"input_transpose_fusion.11": (2, 10), "gemm_fusion_dot.72": (2, 60),
                         "loop_gather_fusion": (2, 8)})
    assert result.op_time_us == pytest.approx(78)  # (5 + 30 + 4) per step
    assert result.unmatched_events == 4  # Memset 0 and the cuBLAS kernel, each step
    assert result.unmatched_us == pytest.approx(42)  # (1 + 20) per step
    assert result.unmatched_share == pytest.approx(42 / 120)
    assert result.unmatched_by_reason == pytest.approx({IN_COMMAND_BUFFERS: 42})
    assert result.count_mismatches == []
    # a step spans the unjoined memset at 5 µs to the gather's end at 84 µs
    assert result.step_times_us == pytest.approx([79, 79])
    assert result.flops_per_step == 2 * DOT_FLOPS  # the fused dot and the cuBLAS custom-call
    peak = get_device("h100").peak_flops.bf16
    assert result.mfu == pytest.approx(2 * DOT_FLOPS / 79e-6 / peak)


def test_report_says_how_much_op_time_was_not_joined_and_how_to_name_it() -> None:
    _, result = _analyse(command_buffers=True)
    report = trace_report(result)
    expected = ("warning: 35.0% of op time (42 µs) in library kernels inside CUDA graphs "
                "(command buffers) could not be joined to an instruction; profile with "
                "XLA_FLAGS=--xla_gpu_enable_command_buffer= to name them")
    assert expected in report.notes
    summary = dict(report.summary)
    assert summary["op time joined to the HLO"].value == pytest.approx(78 / 120)
    modules = [row["module"] for row in report.tables[1].rows]
    assert modules == ["jit_gpu", "(none)"]  # the result copies belong to no program


def test_without_command_buffers_hlo_op_names_every_kernels_instruction() -> None:
    trace, result = _analyse(command_buffers=False)
    assert [e.name for e in trace.events[:5]] == [op for _, op, *_ in KERNELS]
    assert all(e.command_buffer == "" for e in trace.events)
    per_op = {row.instruction: (row.events, row.self_us) for row in result.by_op}
    assert_rows(per_op, {"custom-call.3": (4, 42),  # memset and cuBLAS kernel
                         "input_transpose_fusion.11": (2, 10), "gemm_fusion_dot.72": (2, 60),
                         "loop_gather_fusion": (2, 8)})
    assert result.op_time_us == pytest.approx(120)
    assert (result.unmatched_events, result.unmatched_us, result.unmatched_share) == (0, 0, 0)
    assert not any("could not be joined" in note for note in trace_report(result).notes)
    assert result.step_times_us == pytest.approx([79, 79])


def _kernel(name: str) -> OpEvent:
    return OpEvent(name, "jit_gpu", 0, None, 0, US, "/device:GPU:0", COMPUTE,
                   "command_buffer_105")


def test_a_kernel_name_that_several_instructions_sanitize_to_joins_none() -> None:
    module = load_input(GPU_HLO)
    index = ProgramIndex([TraceProgram(module.name, 0, module, "<text>")])
    names = ["copy_1", "input_transpose_fusion_11", "loop_gather_fusion", "copy.1"]
    joined = join_events([_kernel(name) for name in names], index)
    found = [j.instruction.name if j.instruction else None for j in joined.events]
    # copy.1 and copy-1 are both copy_1; an exact name always joins
    assert found == [None, "input_transpose_fusion.11", "loop_gather_fusion", "copy.1"]


def test_export_labels_kernels_by_their_instruction() -> None:
    _, result = _analyse(command_buffers=True)
    slices = [e for e in chrome_trace(result, None)["traceEvents"] if e["ph"] == "X"]
    assert sorted({s["args"]["instruction"] for s in slices}) == \
        ["gemm_fusion_dot.72", "input_transpose_fusion.11", "loop_gather_fusion"]
    assert {s["name"] for s in slices} == {"transpose", "dot_general", "gather"}


def test_an_op_the_hlo_lacks_is_counted_with_its_own_reason() -> None:
    trace = parse_xplane(_gpu_trace(command_buffers=False), "<gpu>")
    trace.events.append(OpEvent("fusion.999", "jit_gpu", 0, None, 60 * US, 12 * US,
                                "/device:GPU:0", COMPUTE))
    module = load_input(GPU_HLO)
    index = ProgramIndex([TraceProgram(module.name, 0, module, "<text>")])
    result = analyze_trace(trace, index, get_device("h100"))
    assert result.unmatched_by_reason == pytest.approx({NAMES_NO_INSTRUCTION: 12})
    assert result.unmatched_share == pytest.approx(12 / 132)
    (note,) = [n for n in trace_report(result).notes if "could not be joined" in n]
    assert note == (f"warning: 9.1% of op time (12 µs) in {NAMES_NO_INSTRUCTION} could not be "
                    "joined to an instruction")
