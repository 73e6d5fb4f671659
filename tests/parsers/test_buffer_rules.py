"""Buffer shapes `b(...)` as XLA's verifier checks them (`checks/buffer_rules.py`), on
hand-built modules after the examples of XLA's hlo_verifier_test.cc: Pin and Unpin, buffers
only where a custom-call aliases them, each buffer named once in the aliasing, one writer per
buffer. Each fault refused at its instruction with exit 4, the valid forms load, and a lenient
load lets the fault through."""
from __future__ import annotations

import pytest
from located_refusal import assert_refused_at, line_of

import hloscope
from hloscope.errors import ParseError
from hloscope.parsers.checks.buffer_rules import buffer_leaves

_PIN = ('custom-call(%p), custom_call_target="Pin", output_to_operand_aliasing={{}: (0, {})}')
_UNPIN = 'custom_call_target="Unpin", output_to_operand_aliasing={{}: (0, {})}'


def _refused(text: str, message: str, name: str, at: str) -> None:
    """Refused on the line of instruction `name`, where `at` (its first operand) starts."""
    assert_refused_at(text, message, line_of(text, name), at)


def _module(*lines: str) -> str:
    body = "".join(f"  {line}\n" for line in lines)
    return f"HloModule m\n\nENTRY %e {{\n  %p = f32[32] parameter(0)\n{body}}}\n"


def test_buffer_leaves_of_a_shape_text() -> None:
    assert buffer_leaves("b(f32[32])") == {()}
    assert buffer_leaves("(b(f32[16]), b(f32[32]{0}), token[])") == {(0,), (1,)}
    assert buffer_leaves("(s32[], (bf16[2,3], b(s32[2])))") == {(1, 1)}
    assert buffer_leaves("(bf16[2], f32[4]{0:T(4)})") == frozenset()


def test_pin_then_unpin_loads() -> None:
    hloscope.load(_module(f"%b = b(f32[32]) {_PIN}",
                          f"ROOT %r = f32[32] custom-call(%b), {_UNPIN}"))


def test_entry_parameter_holds_no_buffer() -> None:
    text = ("HloModule m\n\nENTRY %e {\n  %p = b(f32[32]) parameter(0)\n"
            f"  ROOT %r = f32[32] custom-call(%p), {_UNPIN}\n}}\n")
    with pytest.raises(ParseError, match="buffers aren't allowed in this context") as caught:
        hloscope.load(text)
    assert caught.value.location.line == 4


def test_pin_and_unpin_declare_one_aliasing() -> None:
    _refused(_module('%b = b(f32[32]) custom-call(%p), custom_call_target="Pin"',
                     f"ROOT %r = f32[32] custom-call(%b), {_UNPIN}"),
             "custom-call to Pin must have one output-to-operand aliasing", "b", "%p)")
    _refused(_module(f"%b = b(f32[32]) {_PIN}",
                     'ROOT %r = f32[32] custom-call(%b), custom_call_target="Unpin"'),
             "custom-call to Unpin must have one output-to-operand aliasing", "r", "%b)")
    _refused(_module(f"%b = b(f32[16]) {_PIN}", f"ROOT %r = f32[16] custom-call(%b), {_UNPIN}"),
             "custom-call to Pin must have the same shape as the operand", "b", "%p)")


def test_buffers_only_in_custom_calls() -> None:
    _refused(_module(f"%b = b(f32[32]) {_PIN}", "%a = b(f32[32]) add(%b, %b)",
                     f"ROOT %r = f32[32] custom-call(%a), {_UNPIN}"),
             "Seen buffers while buffers aren't allowed in this context", "a", "%b, %b)")


def _send(aliasing: str, result: str = "(b(f32[16]), b(f32[32]), token[])") -> str:
    return _module(f"%b = b(f32[32]) {_PIN}",
                   '%c0 = b(f32[32]) custom-call(%b), custom_call_target="start", '
                   "output_to_operand_aliasing={{}: (0, {})}",
                   f'%c1 = {result} custom-call(%c0), custom_call_target="end"{aliasing}, '
                   "custom_call_has_side_effect=true",
                   "ROOT %r = f32[32] copy(%p)")


def test_each_buffer_named_once_in_the_aliasing() -> None:
    _refused(_send(", output_to_operand_aliasing={{1}: (0, {})}"),
             "buffer is used in results but not in operands: {0}", "c1", "%c0)")
    _refused(_send(", output_to_operand_aliasing={{0}: (0, {}), {1}: (0, {})}",
                   "(b(f32[32]), b(f32[32]), token[])"),
             "buffer is used in results multiple times: operand 0", "c1", "%c0)")
    _refused(_send("", "(f32[32], token[])"),
             "buffer is used in operands but not in results: operand 0", "c1", "%c0)")


def test_a_buffer_has_one_writer() -> None:
    writers = ('%w = (b(f32[32]), token[]) custom-call(%b), custom_call_target="writer", '
               "output_to_operand_aliasing={{0}: (0, {})}, custom_call_has_side_effect=true")
    hloscope.load(_module(f"%b = b(f32[32]) {_PIN}", writers,
                          "%g = b(f32[32]) get-tuple-element(%w), index=0",
                          f"ROOT %r = f32[32] custom-call(%g), {_UNPIN}"))
    _refused(_module(f"%b = b(f32[32]) {_PIN}", writers,
                     f"ROOT %r = f32[32] custom-call(%b), {_UNPIN}"),
             "an HLO buffer value has more than one writers (or unpins): b", "b", "%p)")


_WHILE = """HloModule m

%cond (c: (s32[], b(s32[2]))) -> pred[] {
  %c = (s32[], b(s32[2])) parameter(0)
  ROOT %t = pred[] constant(true)
}

%body (q: (s32[], b(s32[2]))) -> (s32[], b(s32[2])) {
  %q = (s32[], b(s32[2])) parameter(0)
  %n = s32[] get-tuple-element(%q), index=0
  %b1 = b(s32[2]) get-tuple-element(%q), index=1
  %b2 = b(s32[2]) custom-call(%b1), custom_call_target="foo",
    output_to_operand_aliasing={{}: (0, {})}
  ROOT %out = (s32[], b(s32[2])) tuple(%n, %b2)
}

ENTRY %e {
  %z = s32[] constant(0)
  %init = s32[2] broadcast(%z), dimensions={}
  %b0 = b(s32[2]) custom-call(%init), custom_call_target="Pin",
    output_to_operand_aliasing={{}: (0, {})}
  %start = (s32[], b(s32[2])) tuple(%z, %b0)
  %w = (s32[], b(s32[2])) while(%start), condition=%cond, body=%body
  %g = b(s32[2]) get-tuple-element(%w), index=1
  ROOT %v = s32[2] custom-call({unpinned}), custom_call_target="Unpin",
    output_to_operand_aliasing={{}: (0, {})}
}
"""


def test_a_buffer_passed_to_a_while_is_written_there() -> None:
    hloscope.load(_WHILE.replace("{unpinned}", "%g"))
    _refused(_WHILE.replace("{unpinned}", "%b0"),
             "an HLO buffer value has more than one writers (or unpins): b0", "b0", "%init)")


def test_async_custom_call_names_its_buffers_in_the_aliasing() -> None:
    start = ('%s = ((b(f32[32])), b(f32[32])) custom-call-start(%b), custom_call_target="foo"'
             "{aliasing}")
    lines = (f"%b = b(f32[32]) {_PIN}", start, "%d = b(f32[32]) custom-call-done(%s)",
             f"ROOT %r = f32[32] custom-call(%d), {_UNPIN}")
    hloscope.load(_module(*lines).replace("{aliasing}",
                                          ", output_to_operand_aliasing={{}: (0, {})}"))
    with pytest.raises(ParseError, match="buffer is used in operands but not in results"):
        hloscope.load(_module(*lines).replace("{aliasing}", ""))
