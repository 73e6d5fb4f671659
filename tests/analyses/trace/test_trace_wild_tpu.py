"""`hloscope trace` on the libtpu capture others wrote (../shared/wild-traces/): no --hlo, its
xprof JSON export, a dump folder; against xprof 2.24.2's figures (the folder's README), the
capture's bytes read by hand (tests/wild_traces.py) and, where installed, xprof itself."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from conftest import FIXTURES
from wild_traces import (
    BROADCAST,
    CORES,
    JIT_F,
    JIT_F_OPS,
    JIT_F_RUNS,
    PSUM,
    TPU,
    TPU_EXPORT,
    XPROF_COPY_DONE_S,
    XPROF_JIT_F_S,
    XPROF_OPS,
    XPROF_PEAK_IN_USE,
    XPROF_PROGRAMS,
    XPROF_TOTAL_US,
    wild,
)

import hloscope
from hloscope.analyses.trace.analysis import TraceResult
from hloscope.analyses.trace.op_stats import DATA_MOVEMENT, FUSION, HOST_TRANSFER
from hloscope.errors import EXIT_NO_HLO, MissingHloError
from hloscope.loader.trace import load_traced
from hloscope.parsers.trace import read_xplane, trace_programs
from hloscope.parsers.trace.hlo_text import module_text
from hloscope.parsers.xla_memory.hlo_proto import decode_message


@pytest.fixture(scope="module")
def result() -> TraceResult:
    return hloscope.trace(wild(TPU), xprof=False)


def _ops(result: TraceResult) -> dict[tuple[int | None, str], tuple[int, float, str]]:
    return {(o.program_id, o.op): (o.occurrences, o.self_us, o.category)
            for o in result.op_stats.ops}


def test_the_embedded_programs_join_without_hlo(result: TraceResult) -> None:
    assert result.module_name == "jit_f" and result.program_id == JIT_F
    assert result.unmatched_events == 0 and result.unmatched_share == 0
    assert all(o.joined for o in result.op_stats.ops)
    assert sum(r.events for r in result.by_op) == CORES * JIT_F_RUNS * JIT_F_OPS
    assert result.steps == JIT_F_RUNS and not result.count_mismatches


def test_op_and_program_self_time_are_xprofs(result: TraceResult) -> None:
    stats = result.op_stats
    assert len(stats.ops) == XPROF_OPS and len(stats.programs) == XPROF_PROGRAMS
    assert stats.total_us == pytest.approx(XPROF_TOTAL_US, abs=1)
    programs = {p.program_id: p.self_us for p in stats.programs}
    assert programs[JIT_F] / 1e6 == pytest.approx(XPROF_JIT_F_S, abs=0.005)
    assert set(programs) == {JIT_F, PSUM, BROADCAST}
    top = [o for o in stats.ops if o.program_id == JIT_F][:4]
    low, high = XPROF_COPY_DONE_S
    assert all(o.category == "copy-done" and low - 0.05 <= o.self_us / 1e6 <= high + 0.05
               for o in top)
    assert all(o.occurrences == CORES * JIT_F_RUNS for o in stats.ops if o.program_id == JIT_F)


def test_groups_as_the_program_moves_its_data(result: TraceResult) -> None:
    """jit_f's params live in host memory (S(5)): its copies are host transfers; its adds are
    loop fusions; jit__psum is one all-reduce; jit_broadcast_in_dim one broadcast."""
    groups = {o.op: o.group for o in result.op_stats.ops}
    assert {groups[f"copy-done{s}"] for s in ("", ".1", ".2", ".3", ".4", ".5")} == {
        HOST_TRANSFER}
    assert groups["broadcast_add_fusion"] == FUSION
    assert groups["all-reduce"] == "collective" and groups["broadcast.2"] == DATA_MOVEMENT
    categories = {c.category: c.ops for c in result.op_stats.categories}
    assert categories == {"copy-done": 6, "copy-start": 6, "loop fusion": 3, "all-reduce": 1,
                          "broadcast": 1}


def test_memory_profile_peak_beside_the_live_peak(result: TraceResult) -> None:
    assert result.extra["memory_profile_peak_bytes"] == XPROF_PEAK_IN_USE
    assert result.extra["live_peak_bytes"] > 0


def test_the_xprof_export_joins_with_the_capture_as_hlo(result: TraceResult) -> None:
    exported = hloscope.trace(wild(TPU_EXPORT), hlo=wild(TPU), xprof=False)
    assert {k: v[:2] for k, v in _ops(exported).items()} == pytest.approx(
        {k: v[:2] for k, v in _ops(result).items()})
    assert exported.unmatched_events == 0 and exported.steps == result.steps


def test_the_export_beside_its_capture_takes_the_capture_as_hlo(result: TraceResult) -> None:
    exported = hloscope.trace(wild(TPU_EXPORT), xprof=False)
    assert exported.hlo_origin == f"the HloProto embedded in {wild(TPU)}"
    assert {k: v[:2] for k, v in _ops(exported).items()} == pytest.approx(
        {k: v[:2] for k, v in _ops(result).items()})


def test_the_export_alone_names_what_is_missing(tmp_path: Path) -> None:
    """A copy of the export in a folder without its capture: nothing embeds the HLO."""
    alone = tmp_path / TPU_EXPORT
    alone.write_bytes(wild(TPU_EXPORT).read_bytes())
    with pytest.raises(MissingHloError) as raised:
        load_traced(alone)
    message = str(raised.value)
    assert raised.value.exit_code == EXIT_NO_HLO
    assert all(str(program) in message for program in (JIT_F, PSUM, BROADCAST))
    assert "--hlo" in message


def _dump(folder: Path, names: set[str]) -> Path:
    """An XLA dump folder of the capture's programs (module_NNNN.<name>.*.txt; NNNN the
    HloModuleProto's id, as XLA numbers a dump), for the programs named."""
    folder.mkdir()
    for embedded in read_xplane(wild(TPU)).modules:
        if embedded.name in names:
            proto = decode_message("xla.HloProto", embedded.hlo_proto, "<capture>").hlo_module
            path = folder / f"module_{proto.id:04d}.{embedded.name}.tpu_after_optimizations.txt"
            path.write_text(module_text(proto))
    return folder


def test_a_dump_folder_joins_by_module_name(tmp_path: Path, result: TraceResult) -> None:
    """libtpu's program ids are fingerprints no dump file carries: joined by name."""
    dump = _dump(tmp_path / "dump", {"jit_f", "jit__psum", "jit_broadcast_in_dim"})
    from_dump = hloscope.trace(wild(TPU), hlo=dump, xprof=False)
    assert from_dump.program_id == JIT_F and from_dump.hlo_origin.endswith(".txt")
    assert _ops(from_dump) == _ops(result)


def test_a_dump_without_some_programs_warns_with_their_ids(tmp_path: Path) -> None:
    dump = _dump(tmp_path / "dump", {"jit_f"})
    index = trace_programs(read_xplane(wild(TPU)), hlo=dump)
    assert [p.name for p in index.programs] == ["jit_f"]
    assert any(str(PSUM) in w and str(BROADCAST) in w for w in index.warnings)


def test_a_dump_of_other_programs_is_refused(tmp_path: Path) -> None:
    trace = read_xplane(wild(TPU))
    dump = _dump(tmp_path / "dump", {"jit_convert_element_type"})  # embedded, never ran
    with pytest.raises(MissingHloError) as raised:
        trace_programs(trace, hlo=dump)
    assert "jit_convert_element_type" in str(raised.value) and str(JIT_F) in str(raised.value)


def test_per_op_and_per_program_against_xprof(result: TraceResult) -> None:
    """xprof's own converter on the same file (skipped without the xprof package)."""
    pytest.importorskip("xprof")
    from xprof_oracle import xprof_figures

    figures = xprof_figures(wild(TPU))
    mine = _ops(result)
    assert len(figures.ops) == len(mine)
    for op in figures.ops:
        occurrences, self_us, category = mine[(op.program_id, op.op)]
        assert occurrences == op.occurrences and category == op.category
        assert self_us == pytest.approx(op.self_us, rel=0.01, abs=0.01)
    programs = {f"{p.module}({p.program_id})": p.self_us for p in result.op_stats.programs}
    assert programs == pytest.approx(figures.programs, rel=0.01)
    assert result.extra["memory_profile_peak_bytes"] == max(figures.memory_peaks.values())


def test_scanned_layers_take_the_time_of_their_iteration() -> None:
    """The CPU fixture's 2 scanned layers: each loop's iterations are delimited by the events of
    the body instruction that starts first (iterations run one after another); a forward
    iteration k is layer k, a backward (and recompute) one layer 1-k. Independent of how
    hloscope numbers events: sums of self time over time windows."""
    folder = FIXTURES / "cpu-trace" / "full-scan"
    traced = load_traced(folder)
    result = hloscope.trace(folder, xprof=False)
    layers = {r.key: r.self_us for r in result.by_layer}
    expected: dict[str, float] = defaultdict(float)
    module = traced.programs.programs[0].module
    for loop in (i for _, i in module.instructions() if i.opcode == "while"):
        body = loop.required_called_computation("body")
        reverse = "transpose(" in loop.op_name
        for joined in _windows(result, body, reverse):
            for key, us in joined.items():
                expected[key] += us
    assert {k: v for k, v in layers.items() if k.startswith("layer_")} == pytest.approx(
        dict(expected), rel=0.01)


def _windows(result: TraceResult, body: str, reverse: bool) -> list[dict[str, float]]:
    """Per run: {layer key: self µs} of the body's events, by the iteration window they start
    in."""
    by_run: dict[int | None, list] = defaultdict(list)
    for joined in result.joined:
        if joined.computation == body:
            by_run[joined.event.run_id].append(joined)
    found = []
    for events in by_run.values():
        first = min(events, key=lambda j: j.event.start_ps).instruction.name
        bounds = sorted(j.event.start_ps for j in events if j.instruction.name == first)
        layers = len(bounds)
        totals: dict[str, float] = defaultdict(float)
        for joined in events:
            k = sum(1 for b in bounds if b <= joined.event.start_ps) - 1
            key = f"layer_{layers - 1 - k if reverse else k}"
            totals[key] += joined.self_ps / 1e6
        found.append(totals)
    return found


def test_the_chip_is_named_by_the_capture(result: TraceResult) -> None:
    """libtpu's planes carry `device_type_string` "TPU v6 Lite" and `peak_teraflops_per_second`
    918: the v6e, whose peak MFU is against without --device."""
    assert result.device == "v6e"
    assert result.peak_flops_per_s == pytest.approx(918e12)


def _raw_lines(line_name: str) -> list[tuple[str, int]]:
    """(event metadata name, duration ps) of TPU:0's line `line_name`, read with the XSpace
    schema alone."""
    from hloscope.parsers.trace.xspace_schema import xspace_class

    space = xspace_class()()
    space.ParseFromString(wild(TPU).read_bytes())
    plane = next(p for p in space.planes if p.name == "/device:TPU:0")
    line = next(line for line in plane.lines if line.name == line_name)
    return [(plane.event_metadata[e.metadata_id].name, e.duration_ps) for e in line.events]


def test_measured_ops_beside_the_step_model(result: TraceResult) -> None:
    """Measured: an op's mean self time (xprof's figure over its occurrences), a host
    transfer's start its mean in-flight span on the Async XLA Ops line; the step: the median of
    jit_f's XLA Modules events on TPU:0. Predicted: the model's own figure, ratio its quotient."""
    import statistics

    check = result.model_check
    assert check is not None and check.device == "v6e" and check.module == "jit_f"
    modules = [d for name, d in _raw_lines("XLA Modules") if name.startswith("jit_f(")]
    assert check.step_measured_s == pytest.approx(statistics.median(modules) / 1e12, rel=1e-3)
    rows = {(r.module, r.op): r for r in check.ops}
    assert rows[("jit_broadcast_in_dim", "broadcast.2")].measured_us == pytest.approx(4443.766,
                                                                                     abs=1e-3)
    spans: dict[str, list[int]] = defaultdict(list)
    for name, duration in _raw_lines("Async XLA Ops"):
        spans[name.split(" =")[0].lstrip("%")].append(duration)
    for op, durations in spans.items():
        row = rows[("jit_f", op)]
        assert row.measured_as.startswith("in flight")
        assert row.measured_us == pytest.approx(statistics.fmean(durations) / 1e6)
    assert all(r.ratio == pytest.approx(r.predicted_us / r.measured_us) for r in check.ops)
    assert {r.op for r in check.ops if r.module == "jit_f"} >= {"broadcast_add_fusion"}


def test_embedded_collectives_print_their_groups_as_libtpu_does() -> None:
    """The all-reduce's channel, replica groups and global ids in the printed HloProto equal
    libtpu's own text of it (the event's name)."""
    import re

    text = next(name for name, _ in _raw_lines("XLA Ops") if name.startswith("%all-reduce"))
    embedded = next(m for m in read_xplane(wild(TPU)).modules if m.name == "jit__psum")
    proto = decode_message("xla.HloProto", embedded.hlo_proto, "<capture>").hlo_module
    printed = next(line for line in module_text(proto).splitlines() if "all-reduce(" in line)
    for key in ("channel_id", "replica_groups", "use_global_device_ids"):
        pattern = rf"{key}=([^ ,]+(?:,[^ ,=]+)*)"
        assert re.search(pattern, printed).group(1) == re.search(pattern, text).group(1), key


def test_memory_in_use_while_the_program_ran(result: TraceResult) -> None:
    """The memory events' stack + heap inside jit_f's executions (its XLA Modules events on
    each core), read with the XSpace schema alone, against hloscope's figure."""
    from hloscope.parsers.trace.xspace_schema import xspace_class

    space = xspace_class()()
    space.ParseFromString(wild(TPU).read_bytes())
    spans = []
    for plane in (p for p in space.planes if p.name.startswith("/device:TPU")):
        line = next(line for line in plane.lines if line.name == "XLA Modules")
        spans += [(line.timestamp_ns * 1000 + e.offset_ps,
                   line.timestamp_ns * 1000 + e.offset_ps + e.duration_ps) for e in line.events
                  if plane.event_metadata[e.metadata_id].name.startswith("jit_f(")]
    host = next(p for p in space.planes if p.name == "/host:CPU")
    names = {key: meta.name for key, meta in host.stat_metadata.items()}
    in_use = []
    for line in host.lines:
        for event in line.events:
            if host.event_metadata[event.metadata_id].name not in ("MemoryAllocation",
                                                                   "MemoryDeallocation"):
                continue
            time = line.timestamp_ns * 1000 + event.offset_ps
            stats = {names[s.metadata_id]: s.int64_value or s.uint64_value for s in event.stats}
            stats.update({names[s.metadata_id]: s.int64_value or s.uint64_value
                          for s in host.event_metadata[event.metadata_id].stats})
            if any(start <= time <= end for start, end in spans):
                in_use.append(stats.get("bytes_reserved", 0) + stats["bytes_allocated"])
    assert result.extra["memory_profile_peak_during_program_bytes"] == max(in_use)
