"""Asynchronous pairs as XLA's verifier checks them (`checks/async_pairs.py`): each fault in a
hand-written module, after the examples of XLA's hlo_verifier_test.cc, refused at its instruction
with exit 4; the valid pairs load."""
from __future__ import annotations

import pytest

import hloscope
from hloscope.errors import ParseError

_ADD = ("%add (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n"
        "  %y = f32[] parameter(1)\n  ROOT %s = f32[] add(%x, %y)\n}\n\n")


def _module(body: str) -> str:
    return f"HloModule m\n\n{_ADD}ENTRY %e {{\n" \
           f"  %p = f32[2,3] parameter(0)\n{body}\n}}\n"


_ENTRY_LINE = 10  # %p; the body starts on line 11
VALID = [
    "  %cs = (f32[2,3], f32[2,3], u32[]) copy-start(%p)\n  ROOT %cd = f32[2,3] copy-done(%cs)",
    "  %as = ((f32[2,3]), f32[3,2], u32[]) custom-call-start(%p), custom_call_target=\"foo\"\n"
    "  %au = ((f32[2,3]), f32[3,2], u32[]) custom-call-update(%as)\n"
    "  %ad = f32[3,2] custom-call-done(%au)\n  ROOT %r = f32[2,3] negate(%p)",
    "  %ars = f32[2,3] all-reduce-start(%p), to_apply=%add\n"
    "  ROOT %ard = f32[2,3] all-reduce-done(%ars)",
]
# (fault, body, line of the refused instruction within the body, message)
FAULTS = [
    ("copy-start with two copy-dones",
     "  %cs = (f32[2,3], f32[2,3], u32[]) copy-start(%p)\n  %d1 = f32[2,3] copy-done(%cs)\n"
     "  %d2 = f32[2,3] copy-done(%cs)\n  ROOT %t = (f32[2,3], f32[2,3]) tuple(%d1, %d2)",
     0, "copy-start instruction requires one consumer, found 2"),
    ("copy-done of a tuple",
     "  %u = u32[] constant(0)\n  %t = (f32[2,3], f32[2,3], u32[]) tuple(%p, %p, %u)\n"
     "  ROOT %cd = f32[2,3] copy-done(%t)",
     2, "operand of a copy-done instruction needs to be copy-start, found tuple"),
    ("copy-start not a tuple",
     "  %cs = f32[2,3] copy-start(%p)\n  ROOT %cd = f32[2,3] copy-done(%cs)",
     0, "expected the copy-start's shape to be (f32[2,3], f32[2,3], u32[])"),
    ("async-start without a done",
     "  ROOT %as = ((f32[2,3]), f32[2,3], u32[]) custom-call-start(%p), "
     "custom_call_target=\"foo\"",
     0, "async-start instruction requires one consumer, found 0"),
    ("async-update without a done",
     "  %as = ((f32[2,3]), f32[2,3], u32[]) custom-call-start(%p), custom_call_target=\"foo\"\n"
     "  ROOT %au = ((f32[2,3]), f32[2,3], u32[]) custom-call-update(%as)",
     1, "async-update instruction requires one consumer, found 0"),
    ("async-done of another shape",
     "  %as = ((f32[2,3]), f32[3,2], u32[]) custom-call-start(%p), custom_call_target=\"foo\"\n"
     "  ROOT %ad = f32[2,3] custom-call-done(%as)",
     1, "expects the shape of output to match the async shape at index {1}"),
    ("all-reduce-start with two dones",
     "  %ars = f32[2,3] all-reduce-start(%p), to_apply=%add\n"
     "  %d1 = f32[2,3] all-reduce-done(%ars)\n  %d2 = f32[2,3] all-reduce-done(%ars)\n"
     "  ROOT %t = (f32[2,3], f32[2,3]) tuple(%d1, %d2)",
     0, "all-reduce-start instruction requires one consumer, found 2"),
    ("all-reduce-done of another shape",
     "  %ars = f32[2,3] all-reduce-start(%p), to_apply=%add\n"
     "  ROOT %ard = f32[3,2] all-reduce-done(%ars)",
     1, "all-reduce-done's shape to be its start's, f32[2,3]"),
]


@pytest.mark.parametrize("body", VALID, ids=["copy", "async chain", "all-reduce"])
def test_valid_pairs_load(body: str) -> None:
    hloscope.load(_module(body))


@pytest.mark.parametrize(("fault", "body", "line", "message"), FAULTS,
                         ids=[fault[0] for fault in FAULTS])
def test_fault_refused_at_its_instruction(fault: str, body: str, line: int,
                                          message: str) -> None:
    with pytest.raises(ParseError) as caught:
        hloscope.load(_module(body))
    assert message in caught.value.message
    assert caught.value.exit_code == 4
    assert caught.value.location.line == _ENTRY_LINE + 1 + line


def test_lenient_skips_the_pairs() -> None:
    body = FAULTS[0][1]
    assert hloscope.load(_module(body), lenient=True).entry_name == "e"
