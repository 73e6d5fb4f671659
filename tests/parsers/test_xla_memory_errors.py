"""Malformed XLA memory dumps are ParseErrors at file:line:col (exit code 4), missing ones
InputErrors (exit code 3); never a traceback from deep inside a reader."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from conftest import FIXTURES

from hloscope.errors import EXIT_INPUT_MALFORMED, InputError, ParseError
from hloscope.model.xla_memory import BufferAssignment, HeapEvent, HeapTrace
from hloscope.parsers.xla_memory import (
    find_memory_artifacts,
    parse_buffer_assignment,
    parse_buffer_assignment_proto,
    parse_hlo_proto,
    parse_live_range,
    parse_usage_report,
    read_buffer_assignment,
    read_live_range,
    replay_heap,
)

CPU = FIXTURES / "cpu" / "remat-none"
ALLOCATION = "allocation 0: size 16, parameter 0, shape |f32[4]| at ShapeIndex {}:"
VALUE = " value: <7 p.1 @0> (size=16,offset=0): f32[4]{0}"
LIVE_HEAD = "HloLiveRange (max 3):\n  InstructionSequence:\n    0:p\n    1:q\n    2:r\n"
LIVE_RANGES = "  BufferLiveRange:\n    p{}:0-3\n    r{}:2-3\n"
PEAK = "  Live ranges at 2 (peak):\n    p{}: 16 bytes (cumulative: 16 bytes)\n"
TREE_HEAD = "  Stack trace breakdown for peak usage: 16 bytes\n"
ROOT = "    main (100.0%, total: 16 bytes, current: 0 bytes, remaining: 16 bytes)\n"
CHILD = "      └── p (100.0%, total: 16 bytes, current: 16 bytes, remaining: 0 bytes)\n"
REPORT = ("Memory Space: default (color=0)\nTotal bytes: 16 (16B)\n"
          "  cumulative_size;       size;       offset; used_by_n_values; shapes_list\n"
          "  ------------------------------------------------------------\n"
          "        16B(100%);        16B;            0;                1; f32[4]\n")


def located(error: ParseError) -> tuple[int, int]:
    return error.location.line, error.location.column


def test_well_formed_samples_parse() -> None:
    """The samples the malformed cases start from are themselves fine."""
    assignment = parse_buffer_assignment(f"BufferAssignment:\n{ALLOCATION}\n{VALUE}\n")
    assert assignment.allocations[0].values[0].key == "p.1{}"
    live = parse_live_range(LIVE_HEAD + LIVE_RANGES + PEAK + TREE_HEAD + ROOT + CHILD)
    assert (live.peak_bytes, live.stack_total_bytes, live.stack[0].children[0].name) == (
        16, 16, "p")
    assert parse_usage_report(REPORT).spaces[0].tables[0].rows[0].shapes == ((1, "f32[4]"),)


@pytest.mark.parametrize(("text", "where", "words"), [
    ("Allocations:\n", (1, 1), "BufferAssignment:"),
    (f"BufferAssignment:\n{VALUE}\n", (2, 1), "before any allocation"),
    ("BufferAssignment:\nallocation zero: size 16:\n", (2, 1), "allocation N"),
    ("BufferAssignment:\nallocation 0: size 16; color 1:\n", (2, 22), "flag"),
    ("BufferAssignment:\nallocation 0: size 16,color 1:\n", (2, 22), "flag"),
    (f"BufferAssignment:\n{ALLOCATION}\n value: <7 p.1 @0> size=16: f32[4]\n", (3, 9), "value"),
    (f"BufferAssignment:\n{ALLOCATION}\n{VALUE.replace('offset=0', 'offset=8')}\n", (3, 20),
     "does not fit"),
    (f"BufferAssignment:\n{ALLOCATION}\n{VALUE}\ngarbage\n", (4, 1), "expected"),
], ids=["header", "orphan-value", "index", "separator", "flag", "value", "overflow", "junk"])
def test_buffer_assignment_errors(text: str, where: tuple[int, int], words: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse_buffer_assignment(text, "ba.txt")
    assert located(caught.value) == where and words in caught.value.message
    assert str(caught.value).startswith(f"ba.txt:{where[0]}:{where[1]}: error:")
    assert caught.value.exit_code == EXIT_INPUT_MALFORMED


def test_values_file_errors() -> None:
    values = "\nTotal bytes used: 16 (16B)\n\nUsed values:\n<7 p.1 @0>\n positions:\n  p.1\n" \
             " uses:\n  q, operand zero\n"
    with pytest.raises(ParseError) as caught:
        parse_buffer_assignment(f"BufferAssignment:\n{ALLOCATION}\n{VALUE}\n", "ba.txt",
                                (values, "values.txt"))
    assert caught.value.location.source == "values.txt"
    assert located(caught.value) == (9, 3)


def test_values_file_definition_spanning_lines() -> None:
    """A Pallas kernel's custom call (splash attention on TPU, libtpu 0.0.42.1) has a raw
    newline in its backend config; its continuation lines belong to the definition."""
    kernel = ('%k = f32[4]{0} custom-call(%p), custom_call_target="tpu_custom_call", '
              'backend_config={"custom_call_config": {"body": "x",\n'
              '"xprof_metadata":"{\\"block_q\\": 512}"\n}}, metadata={op_name="k"}')
    values = ("\nTotal bytes used: 16 (16B)\n\nUsed values:\n<7 p.1 @0>\n positions:\n  p.1\n"
              f" uses:\n  k, operand 0\n from instruction: {kernel}\n<8 k @0>\n positions:\n"
              "  k\n uses:\n  (none)\n from instruction: %k = f32[4]{0} custom-call(%p)\n")
    assignment = parse_buffer_assignment(f"BufferAssignment:\n{ALLOCATION}\n{VALUE}\n",
                                         "ba.txt", (values, "values.txt"))
    first, second = assignment.value_details
    assert first.definition == kernel and first.uses[0].instruction == "k"
    assert (second.id, second.instruction) == (8, "k")


@pytest.mark.parametrize(("text", "where", "words"), [
    ("HloLiveRange:\n", (1, 1), "HloLiveRange (max N)"),
    ("HloLiveRange (max 3):\n  Sequence:\n", (2, 1), "InstructionSequence"),
    (LIVE_HEAD.replace("1:q", "7:q"), (4, 5), "1:instruction"),
    (LIVE_HEAD + "  BufferLiveRange:\n    p{}:3-0\n", (7, 5), "start <= end"),
    (LIVE_HEAD + LIVE_RANGES + "  Live ranges at two (peak):\n", (9, 1), "Live ranges at"),
    (LIVE_HEAD + LIVE_RANGES + PEAK.replace("cumulative: 16", "cumulative: 17"), (10, 19),
     "cumulative"),
    (LIVE_HEAD + LIVE_RANGES + PEAK + "  Stack trace breakdown for peak usage: lots bytes\n",
     (11, 41), "byte count"),
    (LIVE_HEAD + LIVE_RANGES + PEAK + TREE_HEAD + ROOT
     + CHILD.replace("      └──", "          └──"), (13, 11), "levels deep"),
    (LIVE_HEAD + LIVE_RANGES + PEAK + TREE_HEAD + ROOT
     + CHILD.replace("16 bytes,", "16 b,", 1), (13, 7), "total: N bytes"),
    (LIVE_HEAD + LIVE_RANGES + PEAK + "trailing words\n", (11, 1), "unexpected text"),
], ids=["header", "section", "position", "interval", "peak", "cumulative", "tree-total",
        "tree-depth", "tree-node", "trailing"])
def test_live_range_errors(text: str, where: tuple[int, int], words: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse_live_range(text, "lr.txt")
    assert located(caught.value) == where and words in caught.value.message


@pytest.mark.parametrize(("text", "where"), [
    ("Total bytes used: 16\n", (1, 1)),
    ("Memory Space: default (color=0)\nTotal: 16\n", (2, 1)),
    (REPORT.replace("  ------", "  ======"), (4, 1)),
    (REPORT.replace("        16B(100%);", "        16B(all);"), (5, 9)),
    (REPORT + "stray\n", (6, 1)),
], ids=["old-format", "total", "rule", "row", "stray"])
def test_usage_report_errors(text: str, where: tuple[int, int]) -> None:
    with pytest.raises(ParseError) as caught:
        parse_usage_report(text, "report.txt")
    assert located(caught.value) == where


def test_protos_that_are_not_protos() -> None:
    with pytest.raises(ParseError) as caught:
        parse_hlo_proto(b"\x0a\xff\xff\xff", "x.hlo.pb")
    assert str(caught.value).startswith("x.hlo.pb:1:1: error: not a serialized xla.HloProto")
    with pytest.raises(ParseError):
        parse_buffer_assignment_proto(b"\x1a\x05ab", "ba.pb")


def test_a_trace_that_frees_twice() -> None:
    assignment = parse_buffer_assignment(
        "BufferAssignment:\nallocation 0: size 16, preallocated-temp:\n"
        " value: <1 t @0> (size=16,offset=0): f32[4]{0}\n", "ba.txt")
    events = (HeapEvent("ALLOC", 1), HeapEvent("FREE", 1), HeapEvent("FREE", 1))
    broken = BufferAssignment(assignment.allocations, "trace.pb", heap_traces=(HeapTrace(events),))
    with pytest.raises(ParseError, match="freed more often"):
        replay_heap(broken, 0)


def test_files_missing_undecodable_and_gzipped(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        read_live_range(tmp_path / "absent-live-range.txt")
    with pytest.raises(InputError):
        find_memory_artifacts(tmp_path / "absent")
    binary = tmp_path / "x-buffer-assignment.txt"
    binary.write_bytes(b"BufferAssignment:\n\xff\xfe\n")
    with pytest.raises(ParseError) as caught:
        read_buffer_assignment(binary)
    assert located(caught.value) == (2, 1)
    source = next(CPU.glob("*-live-range.txt"))
    packed = tmp_path / (source.name + ".gz")
    packed.write_bytes(gzip.compress(source.read_bytes()))
    assert read_live_range(packed).peak_bytes == read_live_range(source).peak_bytes
