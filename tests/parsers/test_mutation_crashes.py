"""Regressions of the crashes mutation fuzzing found (benchmarks/fuzz_mutations.py, issue 37).

Each input is the smallest hand-written module that reproduces one: a garbled stack-frame table
line (once an AssertionError in the parser), a get-tuple-element past its operand's tuple and one
on an array (once an IndexError in the liveness dataflow), a loop body whose only parameter is
numbered 1 (once a KeyError; XLA's parser aborts on it), a loop body returning another shape.
Each is now hloscope's own error at file:line:col (exit 4), strict or lenient; the valid
counterparts analyse.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from small_modules import LOOPS

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

_OUT = "%out = f32[4]{0} get-tuple-element(%w), index=1"
_BODY_PARAMETER = "%b = (s32[], f32[4]{0}) parameter(0)"


def _loop(body_parameter: int = 0, out_operand: str = "%w", out_index: int = 1) -> str:
    """small_modules.LOOPS (a while loop and a conditional) with one thing changed."""
    return (LOOPS.replace(_BODY_PARAMETER, _BODY_PARAMETER.replace("(0)", f"({body_parameter})"))
            .replace(_OUT, f"%out = f32[4]{{0}} get-tuple-element({out_operand}), "
                           f"index={out_index}"))


def _line_of(text: str, fragment: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if fragment in line)


_OUT_LINE = _line_of(LOOPS, _OUT)
_BODY_PARAMETER_LINE = _line_of(LOOPS, _BODY_PARAMETER)
_WHILE_LINE = _line_of(LOOPS, "while(%init)")


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
    # dataflow's leaf matching. XLA's parser refuses it at the body's header, whose result
    # shape is not its root's; without that header, its verifier at the while (so does hloscope).
    text = _loop().replace("ROOT %t = (s32[], f32[4]{0}) tuple(%k, %y)",
                           "ROOT %t = (s32[], f32[8]{0}) tuple(%k, %y)")
    error = _refused(text, tmp_path)
    assert error.location.line == _line_of(LOOPS, "%body ")
    assert "not compatible with that of its root instruction t" in error.message
    headless = re.sub(r"(%body) \(.*\) -> .* \{", r"\1 {", text)
    error = _refused(headless, tmp_path)
    assert error.location.line == _WHILE_LINE
    assert "is not that of body's root t" in error.message


_CONDITIONAL = ("ROOT %c = f32[4]{0} conditional(%q, %out, %out), true_computation=%left, "
                "false_computation=%right")


@pytest.mark.parametrize("callee", ["\u1bfcleft", "!left", "left!", "(f32[], (s32[]))%left",
                                    "{%left!, %right}", "%left .10", "{%left} .10"])
def test_called_computation_that_is_not_a_name(callee: str, tmp_path: Path) -> None:
    # Once a KeyError in the analyses: the check that callees exist trusted a first look that
    # skipped a value it could not read, or read a name before a blank and took it for the value
    # (`%left .10`, fuzz run 9's input 714015). A second conditional with the same attributes takes
    # the C accelerator's path for the same check.
    twice = _CONDITIONAL.replace("ROOT %c =", "%c0 =") + "\n  " + _CONDITIONAL.replace(
        "(%q, %out, %out)", "(%q, %c0, %out)").replace("=%left", "=" + callee)
    text = LOOPS.replace(_CONDITIONAL, twice)
    assert text != LOOPS
    error = _refused(text, tmp_path)
    assert error.location.line == _line_of(LOOPS, _CONDITIONAL) + 1
    assert "is not defined above its use" in error.message


@pytest.mark.parametrize("lenient", [False, True])
@pytest.mark.parametrize("key", ["num_partitions", "replica_count"])
def test_header_count_that_is_not_an_integer(key: str, lenient: bool, tmp_path: Path) -> None:
    # `num_partitions=20x`: once a ValueError in inspect and flops; XLA's parser refuses it.
    text = LOOPS.replace("is_scheduled=true", f"is_scheduled=true, {key}=20x")
    path = tmp_path / "m.hlo"
    path.write_text(text)
    with pytest.raises(ParseError) as caught:
        module = hloscope.load(path, lenient=lenient)
        hloscope.flops(module)
    error = caught.value
    assert (error.location.line, error.location.column) == (1, text.index("20x") + 1)
    assert f"{key}: expected an integer, got '20x'" in error.message


_CONVOLUTION = """HloModule m

ENTRY %e (x: f32[1,4,4,2], k: f32[3,3,2,8]) -> f32[1,4,4,8] {
  %x = f32[1,4,4,2] parameter(0)
  %k = f32[3,3,2,8] parameter(1)
  ROOT %c = f32[1,4,4,8] convolution(%x, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=LABELS
}
"""


@pytest.mark.parametrize("lenient", [False, True])
def test_convolution_dim_labels_missing_a_dimension(tmp_path: Path, lenient: bool) -> None:
    # A flipped character made the output labels `b01 ` (no f): once a ValueError in flops,
    # inspect, remat and check (fuzz run 4, input 335563). XLA's shape inference refuses labels
    # that do not name each dimension once; hloscope at load, with or without --lenient.
    valid = _CONVOLUTION.replace("LABELS", "b01f_01io->b01f")
    module = hloscope.load(valid)
    # 2 · out features · in features · taps inside the padded input, (2+3+3+2) per spatial dim
    assert hloscope.flops(module).total.flops == 2 * 8 * 2 * (2 + 3 + 3 + 2) ** 2
    error = _refused(_CONVOLUTION.replace("LABELS", "b01f_01io->b01"), tmp_path, lenient=lenient)
    assert error.location.line == 6
    assert "output part 'b01' does not name each of the 4 dimensions" in error.message


_HUGE = """HloModule m, is_scheduled=true

ENTRY %e (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %c = SHAPE copy(f32[4]{0} %p)
  ROOT %r = f32[4]{0} negate(f32[4]{0} %p)
}
"""


@pytest.mark.parametrize("shape", ["f32[299999999999999999999]{0}",  # past int64 (fuzz 460501)
                                   "f32[4611686018427387904]{0}"])    # 2^62 x 4 B overflows
def test_an_array_past_int64_is_refused_at_its_dimensions(shape: str) -> None:
    """Once an OverflowError in the heap packing: XLA keeps dimensions and byte sizes in int64
    (its parser and ShapeUtil::ValidateShape refuse these), so loading does too, located."""
    text = _HUGE.replace("SHAPE", shape)
    for lenient in (False, True):
        with pytest.raises(ParseError) as caught:
            hloscope.load(text, lenient=lenient)
        assert (caught.value.location.line, caught.value.location.column) == (5, 12)
    assert hloscope.memory(_HUGE.replace("SHAPE", "f32[4]{0}")).peak_bytes > 0
