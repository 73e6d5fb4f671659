"""libtpu's XSpace and xprof's JSON export of it, read as they are written: programs, ids, op
names, device-clock times, the memory events' peak. Truths: the capture's own bytes read by hand
(tests/wild_traces.py) and xprof 2.24.2's figures for it (the shared folder's README)."""
from __future__ import annotations

from collections import Counter

import pytest
from wild_traces import (
    ASYNC_EVENTS,
    BROADCAST,
    CONVERT,
    JIT_F,
    OPS_PER_CORE,
    PSUM,
    SIGNED_IDS,
    TPU,
    TPU_DAMAGED,
    TPU_EXPORT,
    XPROF_COPY_DONE_S,
    XPROF_JIT_F_S,
    XPROF_OPS,
    XPROF_PEAK_IN_USE,
    XPROF_PROGRAMS,
    XPROF_TOTAL_US,
    wild,
)

from hloscope.errors import EXIT_INPUT_MALFORMED, ParseError
from hloscope.model.trace import PS_PER_US, Trace
from hloscope.parsers.trace import read_trace_json, read_xplane
from hloscope.parsers.trace.device_ops import RawEvent, op_name, program_id, split_module_name

NAMES = {JIT_F: "jit_f", PSUM: "jit__psum", BROADCAST: "jit_broadcast_in_dim",
         CONVERT: "jit_convert_element_type"}


@pytest.fixture(scope="module")
def xspace() -> Trace:
    return read_xplane(wild(TPU))


@pytest.fixture(scope="module")
def export() -> Trace:
    return read_trace_json(wild(TPU_EXPORT))


def _per_op_us(trace: Trace) -> dict[tuple[int | None, str], float]:
    totals: Counter[tuple[int | None, str]] = Counter()
    for event in trace.events:
        totals[(event.program_id, event.name)] += event.duration_ps
    return {key: ps / PS_PER_US for key, ps in totals.items()}


def test_the_four_embedded_programs_and_their_ids(xspace: Trace) -> None:
    """No `program_id` stat: the ids come from the names, the same as the metadata's signed
    ids read as unsigned 64-bit."""
    assert {m.program_id: m.name for m in xspace.modules} == NAMES
    assert all(signed % (1 << 64) == unsigned for unsigned, signed in SIGNED_IDS.items())


def test_op_events_of_the_four_cores(xspace: Trace) -> None:
    planes = Counter(e.plane for e in xspace.events)
    assert [planes[f"/device:TPU:{core}"] for core in range(4)] == list(OPS_PER_CORE)
    assert {e.line for e in xspace.events} == {"XLA Ops"}
    assert len(xspace.async_events) == ASYNC_EVENTS
    assert all(e.program_id in NAMES and e.module == NAMES[e.program_id] for e in xspace.events)
    assert all(e.run_id is not None for e in xspace.events)


def test_per_op_time_is_xprofs(xspace: Trace) -> None:
    """Op names from the instruction text / display_name, times on the device clock."""
    per_op = _per_op_us(xspace)
    assert len(per_op) == XPROF_OPS
    assert len({program for program, _ in per_op}) == XPROF_PROGRAMS
    assert sum(per_op.values()) == pytest.approx(XPROF_TOTAL_US, abs=1)
    jit_f = sum(us for (program, _), us in per_op.items() if program == JIT_F)
    assert jit_f / 1e6 == pytest.approx(XPROF_JIT_F_S, abs=0.005)
    largest = sorted(((us, name) for (program, name), us in per_op.items()
                      if program == JIT_F), reverse=True)[:4]
    assert {name.split(".")[0] for _, name in largest} == {"copy-done"}
    low, high = XPROF_COPY_DONE_S
    assert all(low - 0.05 <= us / 1e6 <= high + 0.05 for us, _ in largest)


def test_the_json_export_gives_the_same_ops(xspace: Trace, export: Trace) -> None:
    """xprof's export: op names in `name`, programs from the XLA Modules thread, the ops 0 ps
    long on the host clock written as instant events (kept)."""
    assert export.kind == "trace-json" and not export.modules
    assert _per_op_us(export) == pytest.approx(_per_op_us(xspace))
    assert len(export.events) == len(xspace.events)


def test_categories_are_libtpus(xspace: Trace) -> None:
    categories = {e.name: e.category for e in xspace.events}
    assert categories["all-reduce"] == "all-reduce"
    assert categories["broadcast_add_fusion"] == "loop fusion"
    assert categories["copy-done.4"] == "copy-done"


def test_memory_events_peak_is_memory_profiles(xspace: Trace) -> None:
    assert len(xspace.memory_peaks) == 4
    assert max(p.peak_in_use_bytes for p in xspace.memory_peaks) == XPROF_PEAK_IN_USE


def test_a_damaged_capture_says_so() -> None:
    with pytest.raises(ParseError) as raised:
        read_xplane(wild(TPU_DAMAGED))
    assert raised.value.exit_code == EXIT_INPUT_MALFORMED
    assert "damaged" in str(raised.value) and "ef bf bd" in str(raised.value)


@pytest.mark.parametrize(("value", "expected"), [
    (-6255983156473747731, 12190760917235803885), ("12190760917235803885", 12190760917235803885),
    (7, 7), ("", None), (None, None), ("x", None)])
def test_program_ids_read_unsigned(value: object, expected: int | None) -> None:
    assert program_id(value) == expected


def test_module_names_carry_their_id() -> None:
    assert split_module_name("jit_f(12190760917235803885)") == ("jit_f", JIT_F)
    assert split_module_name("jit_f") == ("jit_f", None)


@pytest.mark.parametrize(("name", "display", "stats", "expected"), [
    ("%copy-done.4 = f32[5]{0} copy-done((f32[5]{0}) %copy-start.4)", "copy-done.4", {},
     "copy-done.4"),  # libtpu's XLA Ops line
    ("%copy-start.2 = (f32[5]{0}, u32[]) copy-start(f32[5]{0} %p)", "async-copy",
     {"hlo_op": "copy-done.2"}, "copy-done.2"),  # hlo_op first (see the async case below)
    ("fusion.3", "", {"hlo_op": "fusion.3"}, "fusion.3"),  # XLA:CPU / XLA:GPU
    ("broadcast.2", "broadcast.2", {"long_name": "%broadcast.2 = f32[] broadcast()"},
     "broadcast.2"),  # xprof's JSON export
    ("", "", {"long_name": "%add.1 = f32[] add(%a, %b)"}, "add.1"),
])
def test_op_name_spellings(name: str, display: str, stats: dict, expected: str) -> None:
    assert op_name(RawEvent(name, display, stats, 0, 0)) == expected


def test_an_async_event_is_named_by_its_own_op() -> None:
    raw = RawEvent("%copy-start.2 = (f32[5]{0}, u32[]) copy-start(f32[5]{0} %p)", "async-copy",
                   {"hlo_op": "copy-done.2"}, 0, 0)
    assert op_name(raw, by_hlo_op=False) == "copy-start.2"
