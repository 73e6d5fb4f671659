"""Operands written `%tuple#i` (jax 0.11's printer folds get-tuple-elements into them): each
becomes a get-tuple-element again, right after its tuple, and a wrong one is a located error."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES
from xla_oracle import compare_with_xla_printing, printing_beside, xla_available

import hloscope
from hloscope.cli.main import cli
from hloscope.errors import ParseError
from hloscope.parsers.text import parse_text

FOLDED = """HloModule m, is_scheduled=true

ENTRY %main (p: (f32[4], (s32[], f32[8]))) -> f32[8] {
  %p = (f32[4]{0}, (s32[], f32[8]{0})) parameter(0)
  %neg = f32[4]{0} negate(%p#0)
  %add = f32[4]{0} add(%neg, %p#0)
  ROOT %twice = f32[8]{0} add(%p#1#1, %p#1#1)
}
"""
JAX011 = FIXTURES / "gpu-h100-jax011" / "profile-tiny"


def _entry(text: str):
    (module,) = parse_text(text, "folded.hlo")
    return module.computations[module.entry_name].instructions


def test_each_folded_element_is_one_get_tuple_element_after_its_tuple() -> None:
    names = [(i.name, i.opcode) for i in _entry(FOLDED)]
    assert names == [("p", "parameter"), ("p#0", "get-tuple-element"),
                     ("p#1", "get-tuple-element"), ("p#1#1", "get-tuple-element"),
                     ("neg", "negate"), ("add", "add"), ("twice", "add")]
    element = {i.name: i for i in _entry(FOLDED)}
    assert element["p#1#1"].operands == ("p#1",)
    assert element["p#1#1"].raw_attribute("index") == "1"
    assert str(element["p#1#1"].shape) == "f32[8]{0}"
    assert str(element["p#1"].shape) == "(s32[], f32[8]{0})"


def test_memory_reads_through_the_folded_elements() -> None:
    """A get-tuple-element allocates nothing: at the root the parameter's arrays (16 + 4 + 32
    bytes) and its two index tables (2 pointers of 8 bytes each) are live with the root's 32."""
    result = hloscope.memory(parse_text(FOLDED, "folded.hlo")[0])
    assert result.peak_bytes == 16 + 4 + 32 + 2 * 16 + 32
    assert sorted(row.name for row in result.live_at_peak) == [
        "p{0}", "p{1,0}", "p{1,1}", "p{1}", "p{}", "twice{}"]


@pytest.mark.parametrize(("operand", "message"), [
    ("%p#2", "operand p#2: p has no tuple element 2"),
    ("%q#0", "operand q#0 reads element 0 of q, which is not defined before its use"),
    ("%p#x", "operand p#x: expected a tuple index after '#'"),
    ("%p#0#0", "operand p#0#0: p#0 has no tuple element 0"),
])
def test_a_wrong_element_is_an_error_at_its_operand(operand: str, message: str) -> None:
    text = FOLDED.replace("negate(%p#0)", f"negate({operand})")
    with pytest.raises(ParseError) as raised:
        parse_text(text, "folded.hlo")
    assert message in str(raised.value)
    assert raised.value.location.line == 5
    assert raised.value.location.column == text.splitlines()[4].index(operand[1:]) + 1


def test_the_cli_says_where_and_exits_4(tmp_path: Path) -> None:
    path = tmp_path / "bad.hlo"
    path.write_text(FOLDED.replace("negate(%p#0)", "negate(%p#7)"))
    result = CliRunner().invoke(cli, ["inspect", str(path)])
    assert result.exit_code == 4
    assert f"{path}:5:" in result.output and "p has no tuple element 7" in result.output


@pytest.mark.skipif(not xla_available(), reason="XLA's parser (jaxlib) is the oracle")
def test_jax011_h100_dump_agrees_with_xla_printing_its_own_proto() -> None:
    """The fixture's text has no get-tuple-element statement; the HloProto in its trace has 118.
    This jaxlib's XLA prints that proto with every one written out: the same instructions, and
    the same (tuple, index, shape) get-tuple-elements in every computation."""
    path = next(JAX011.glob("*gpu_after_optimizations.txt"))
    text = path.read_text()
    assert "get-tuple-element" not in text
    reference = printing_beside(path)
    assert reference.count("get-tuple-element(") == 118
    assert compare_with_xla_printing(text, str(path), reference) == []
    swapped = text.replace("fusion(%loop_add_divide_fusion#1)", "fusion(%loop_add_divide_fusion#0)",
                           1)
    assert swapped != text
    assert compare_with_xla_printing(swapped, str(path), reference) != []
