"""The committed CPU trace (fixtures/cpu-trace/full-scan: tiny preset, full remat, scanned
layers, 2 steps; fixtures/make_trace_fixture.py) against independent truth: XLA's own text dump
of the same program, its trip-count annotations, the trace JSON read with the json module, and
xprof's memory_viewer."""
from __future__ import annotations

import gzip
import json
import shutil
import statistics
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from conftest import FIXTURES

from hloscope.analyses.cost.flops import flops
from hloscope.analyses.cost.remat import remat
from hloscope.analyses.memory.analysis import memory
from hloscope.analyses.trace.analysis import analyze_trace
from hloscope.analyses.trace.run import add_xprof_figures, analyse_traced
from hloscope.devices import get_device
from hloscope.loader.trace import load_traced
from hloscope.parsers.hlo_file import load_file
from hloscope.parsers.trace import load_trace, trace_programs
from hloscope.parsers.trace.programs import EMBEDDED
from hloscope.parsers.xla_memory import memory_analysis_figures, parse_hlo_proto

FOLDER = FIXTURES / "cpu-trace" / "full-scan"
HLO = next((FOLDER / "hlo").glob("*.txt.gz"))
STEPS = json.loads((FOLDER / "profile.json").read_text())["steps"]
XPLANE = next(FOLDER.rglob("*.xplane.pb.gz"))
TRACE_JSON = next(FOLDER.rglob("*.trace.json.gz"))


def _xla_module():
    return load_file(HLO)[0]


def _result(source: Path = FOLDER, hlo: Path | None = HLO, device: str = "cpu"):
    trace = load_trace(source)
    return trace, analyze_trace(trace, trace_programs(trace, hlo), get_device(device))


def test_every_op_event_maps_to_an_instruction_of_xlas_dump() -> None:
    trace, result = _result()
    names = {i.name for _, i in _xla_module().instructions()}
    assert trace.kind == "xplane" and len(trace.events) > 500
    assert {e.name for e in trace.events} <= names
    assert result.unmatched_events == 0 and result.programs[0].joined


def _expected_executions(module) -> dict[str, int]:
    """Instruction -> executions per step, from XLA's known_trip_count annotations."""
    counts: dict[str, int] = defaultdict(int)

    def visit(name: str, times: int) -> None:
        for instruction in module.computation(name).instructions:
            counts[instruction.name] += times
            if instruction.opcode == "while":
                trip = int(instruction.backend_config["known_trip_count"]["n"])
                visit(instruction.called_computation("body"), times * trip)
                visit(instruction.called_computation("condition"), times * (trip + 1))

    visit(module.entry_name, 1)
    return counts


def test_event_count_per_instruction_is_trip_count_times_steps() -> None:
    trace, _ = _result()
    module = _xla_module()
    expected = _expected_executions(module)
    assert any(c.opcode == "while" for _, c in module.instructions())
    assert any(count == 2 for count in expected.values())  # the scanned layers: trip count 2
    counts = Counter(e.name for e in trace.events)
    assert {name: counts[name] for name in counts} == \
        {name: expected[name] * STEPS for name in counts}


def test_embedded_hlo_proto_reads_like_xlas_text_dump() -> None:
    trace = load_trace(FOLDER)
    (program,) = trace_programs(trace).programs
    assert program.origin == EMBEDDED
    text = _xla_module()
    ours, theirs = flops(program.module), flops(text)
    assert ours.total == theirs.total
    assert [(r.key, r.flops) for r in ours.rows("phase")] == \
        [(r.key, r.flops) for r in theirs.rows("phase")]
    assert {(i.name, i.opcode) for _, i in program.module.instructions()} == \
        {(i.name, i.opcode) for _, i in text.instructions()}
    keys = ("offset_dims", "collapsed_slice_dims", "start_index_map", "index_vector_dim",
            "slice_sizes", "update_window_dims", "inserted_window_dims",
            "scatter_dims_to_operand_dims")

    def dimension_numbers(module) -> dict:
        return {i.name: {key: i.raw_attribute(key) for key in keys}
                for _, i in module.instructions() if i.opcode in ("gather", "scatter")}
    printed = dimension_numbers(program.module)
    assert printed and printed == dimension_numbers(text)


def _json_runs() -> dict[str, list[dict]]:
    """The op events of the trace JSON by run id, read with the json module alone."""
    events = json.loads(gzip.decompress(TRACE_JSON.read_bytes()))["traceEvents"]
    runs: dict[str, list[dict]] = defaultdict(list)
    for event in events:
        if event.get("ph") == "X" and "hlo_op" in event.get("args", {}):
            runs[event["args"]["run_id"]].append(event)
    return runs


def test_step_times_are_the_runs_wall_times() -> None:
    _, result = _result()
    walls = sorted((min(e["ts"] for e in run), max(e["ts"] + e["dur"] for e in run)
                    - min(e["ts"] for e in run)) for run in _json_runs().values())
    assert result.steps == STEPS == len(walls)
    assert result.step_times_us == pytest.approx([wall for _, wall in walls], abs=1e-3)


def test_json_fallback_agrees_with_the_xplane() -> None:
    _, from_xplane = _result(XPLANE)
    _, from_json = _result(TRACE_JSON)
    assert from_json.kind == "trace-json" and from_json.program_id is None
    assert from_json.warnings == []  # one program of that name: unambiguous
    ours = {r.instruction: r.self_us for r in from_xplane.by_op}
    theirs = {r.instruction: r.self_us for r in from_json.by_op}
    assert ours.keys() == theirs.keys()
    for name, value in ours.items():  # the JSON rounds times to the nanosecond
        assert theirs[name] == pytest.approx(value, abs=0.05), name
    assert from_json.remat_time_share == pytest.approx(from_xplane.remat_time_share, abs=1e-4)


def test_json_fallback_warns_when_the_module_name_is_ambiguous(tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    dump.mkdir()
    text = gzip.decompress(HLO.read_bytes())
    for program in (0, 7):
        (dump / f"module_{program:04d}.jit_train_step.cpu_after_optimizations.txt") \
            .write_bytes(text)
    _, from_json = _result(TRACE_JSON, dump)
    (warning,) = from_json.warnings
    assert "ambiguous" in warning and "jit_train_step" in warning
    _, from_xplane = _result(XPLANE, dump)  # program ids resolve it
    assert from_xplane.warnings == [] and from_xplane.program_id == 0


def test_remat_time_lies_between_pure_and_any_recompute_ops() -> None:
    """Bounds from the op_names of XLA's dump and the JSON's durations: recomputed time is at
    least the time of ops whose named instructions are all recomputed, and at most that of ops
    with any recomputed instruction or with no name at all (XLA's copies and converts, which
    take a neighbour's name)."""
    module = _xla_module()
    marked = _recompute_marks(module)
    durations = Counter()
    for run in _json_runs().values():
        for event in run:
            durations[event["args"]["hlo_op"]] += event["dur"]
    pure = sum(d for name, d in durations.items() if marked.get(name) == "all")
    anything = sum(d for name, d in durations.items() if marked.get(name) in ("all", "some"))
    _, result = _result()
    recomputed_us = result.remat_time_share * result.op_time_us
    assert pure > 0
    assert pure / 1.001 <= recomputed_us <= anything * 1.001


def _recompute_marks(module) -> dict[str, str]:
    marks = {}
    for _, instruction in module.instructions():
        fused = [instruction]
        if instruction.opcode == "fusion":
            fused = module.computation(instruction.called_computation("calls")).instructions
        names = [i.op_name for i in fused if i.opcode not in ("parameter", "constant")
                 and i.op_name]
        flags = ["rematted_computation" in name for name in names]
        marks[instruction.name] = "all" if flags and all(flags) else \
            "some" if any(flags) or not names else "none"
    return marks


def test_mfu_on_a_device_with_a_known_peak_uses_static_flops() -> None:
    _, cpu = _result()
    assert cpu.mfu is None and cpu.hfu is None  # CPU: no published peak
    _, result = _result(device="v5e")  # as if measured on a v5e: the formula, not the figure
    module = _xla_module()
    total, recomputed = flops(module).total.flops, remat(module).recompute_flops
    assert recomputed > 0
    step_s = statistics.median(result.step_times_us) / 1e6
    peak = get_device("v5e").peak_flops.bf16
    assert result.hfu == pytest.approx(total / step_s / peak)
    assert result.mfu == pytest.approx((total - recomputed) / step_s / peak)


def test_xprof_peak_heap_is_xlas_allocation(tmp_path: Path) -> None:
    pytest.importorskip("xprof", reason="xprof (tensorboard-plugin-profile, the `profile` "
                                        "extra) is not installed")
    from hloscope.parsers.trace.xprof import xprof_peak_heap

    copy = tmp_path / XPLANE.name
    shutil.copyfile(XPLANE, copy)
    trace = load_trace(copy)
    (embedded,) = trace.modules
    assignment = parse_hlo_proto(embedded.hlo_proto).assignment
    allocated = memory_analysis_figures(assignment, "cpu").allocated_bytes
    figures = xprof_peak_heap(copy, embedded.name, embedded.program_id)
    assert figures is not None
    assert figures.peak_heap_bytes == pytest.approx(allocated, abs=1 << 10)
    traced = load_traced(copy)
    assert traced.xprof_peak_heap_bytes(embedded.name, embedded.program_id) == (
        figures.peak_heap_bytes)


def test_xprof_figures_come_from_the_loader_and_sit_beside_the_live_peak() -> None:
    """The analysis only places the figure the loader got; a trace JSON gives none, and a
    missing figure is said (issue 21), not dropped."""
    from_json = load_traced(TRACE_JSON, HLO)
    assert from_json.trace.kind != "xplane"
    assert from_json.xprof_peak_heap_bytes("any", None) is None
    traced = load_traced(FOLDER, HLO)
    result = analyse_traced(traced, "cpu")
    before = dict(result.extra)
    live_peak = memory(traced.programs.programs[0].module).peak_bytes
    add_xprof_figures(result, traced, None, "n/a: why")
    assert result.extra == {**before, "xprof_peak_heap_bytes": None,
                            "live_peak_bytes": live_peak, "xprof_note": "n/a: why"}
    result.extra = dict(before)
    add_xprof_figures(result, traced, 12345)
    assert result.extra == {**before, "xprof_peak_heap_bytes": 12345,
                            "live_peak_bytes": live_peak}
