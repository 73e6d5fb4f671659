"""Regressions of the crashes mutation fuzzing found (benchmarks/fuzz_mutations.py, issue 37).

Each input is the smallest hand-written module that reproduces one: a garbled stack-frame table
line (once an AssertionError in the parser), a get-tuple-element past its operand's tuple and one
on an array (once an IndexError in the liveness dataflow), a loop body whose only parameter is
numbered 1 (once a KeyError; XLA's parser aborts on it). Each is now hloscope's own error at
file:line:col (exit 4), strict or lenient; the valid counterparts analyse.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import hloscope
from hloscope.errors import ParseError

_STACK_FRAMES = """HloModule m, is_scheduled=true

FileNames
{entry}

ENTRY %e (p: f32[4]) -> f32[4] {{
  %p = f32[4]{{0}} parameter(0)
  ROOT %r = f32[4]{{0}} negate(f32[4]{{0}} %p)
}}
"""

_LOOP = """HloModule loop, is_scheduled=true

%cond (c: (s32[], f32[4])) -> pred[] {
  %c = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%c), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (b: (s32[], f32[4])) -> (s32[], f32[4]) {
  %b = (s32[], f32[4]{0}) parameter(BODY_PARAMETER)
  %j = s32[] get-tuple-element(%b), index=0
  %x = f32[4]{0} get-tuple-element(%b), index=1
  %one = s32[] constant(1)
  %k = s32[] add(%j, %one)
  ROOT %t = (s32[], f32[4]{0}) tuple(%k, %x)
}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4]{0}) tuple(%zero, %p)
  %w = (s32[], f32[4]{0}) while(%init), condition=%cond, body=%body
  ROOT %out = f32[4]{0} get-tuple-element(OUT_OPERAND), index=OUT_INDEX
}
"""
_OUT_LINE = 24  # the ROOT get-tuple-element of %main
_BODY_PARAMETER_LINE = 11


def _loop(body_parameter: int = 0, out_operand: str = "%w", out_index: int = 1) -> str:
    return (_LOOP.replace("BODY_PARAMETER", str(body_parameter))
            .replace("OUT_OPERAND", out_operand).replace("OUT_INDEX", str(out_index)))


def _refused(text: str, tmp_path: Path, lenient: bool = False) -> ParseError:
    path = tmp_path / "m.hlo"
    path.write_text(text)
    with pytest.raises(ParseError) as caught:
        module = hloscope.load(path, lenient=lenient)
        hloscope.memory(module)
    error = caught.value
    assert error.exit_code == 4
    assert error.location.source == str(path)
    return error


def test_valid_modules_analyse() -> None:
    for text in (_STACK_FRAMES.format(entry='1 "a.py"'), _loop()):
        module = hloscope.load(text)
        hloscope.inspect(module)
        hloscope.flops(module)
        hloscope.remat(module)
        assert hloscope.memory(module) is not None


@pytest.mark.parametrize("entry", ['1"a.py"', "7", "\u00b2 \"a.py\"", "12abc"])
def test_garbled_stack_frame_table_line(entry: str, tmp_path: Path) -> None:
    error = _refused(_STACK_FRAMES.format(entry=entry), tmp_path)
    assert (error.location.line, error.location.column) == (4, 1)
    assert "expected '<id> <value>' in the FileNames section" in error.message


def test_stack_frame_table_cut_after_the_id(tmp_path: Path) -> None:
    error = _refused("HloModule m\n\nFileNames\n1", tmp_path)
    assert (error.location.line, error.location.column) == (4, 1)


@pytest.mark.parametrize("lenient", [False, True])
def test_get_tuple_element_past_its_tuple(lenient: bool, tmp_path: Path) -> None:
    # %w is a tuple of 2 elements: index 2 does not exist (XLA's verifier refuses it).
    error = _refused(_loop(out_index=2), tmp_path, lenient)
    assert error.location.line == _OUT_LINE
    assert "shape index {2} is out of range" in error.message
    assert "tuple of 2 element(s)" in error.message


def test_get_tuple_element_of_an_array(tmp_path: Path) -> None:
    error = _refused(_loop(out_operand="%p", out_index=0), tmp_path)
    assert error.location.line == _OUT_LINE
    assert "goes below an array" in error.message


def test_loop_body_parameter_numbered_past_its_count(tmp_path: Path) -> None:
    # One parameter numbered 1: XLA's parser aborts ("invalid parameter number. Expected
    # [0, 1), got 1"); hloscope refuses it at the parameter.
    error = _refused(_loop(body_parameter=1), tmp_path)
    assert error.location.line == _BODY_PARAMETER_LINE
    assert "invalid parameter number 1" in error.message


def test_loop_body_without_parameter_zero_under_lenient(tmp_path: Path) -> None:
    error = _refused(_loop(body_parameter=1), tmp_path, lenient=True)
    assert "its body body has no parameter(0)" in error.message


def test_loop_body_root_of_another_shape(tmp_path: Path) -> None:
    # The body returns (s32[], f32[8]) for a loop of (s32[], f32[4]): once a crash in the
    # dataflow's leaf matching; XLA's verifier refuses it, hloscope at load.
    text = _loop().replace("ROOT %t = (s32[], f32[4]{0}) tuple(%k, %x)",
                           "%x8 = f32[8]{0} broadcast(%one), dimensions={}\n"
                           "  ROOT %t = (s32[], f32[8]{0}) tuple(%k, %x8)")
    error = _refused(text, tmp_path)
    assert error.location.line == _OUT_LINE  # the while: one line above the ROOT, which
    # the inserted %x8 line moved down by one
    assert "is not that of body's root t" in error.message
