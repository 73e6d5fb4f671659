"""The load's fast paths read what the careful path reads: a tuple-shaped instruction whose shape
was seen before, a header whose parameters are arrays, an attribute list split by one regex per
item. Checked against XLA's own parser and against values written by hand."""
from __future__ import annotations

import pytest
from xla_oracle import compare_with_xla, xla_available

import hloscope
from hloscope.model.attributes import split_attributes
from hloscope.model.shape_text import TextSyntaxError
from hloscope.parsers.validate import validate

_TUPLE6 = ("(f32[2]{0}, s32[], f32[2]{0}, s32[], f32[2]{0}, /*index=5*/s32[])")
# The same tuple shapes in two computations: `t` and `w` are read by the careful path (which
# memoizes their shapes), `t2` and `w2` (each after a one-line instruction) by the one-line path.
MODULE = f"""HloModule m, entry_computation_layout={{(f32[2]{{0}}, s32[])->f32[2]{{0}}}}

pair {{
  a = f32[2]{{0}} parameter(0)
  b = s32[] parameter(1)
  t = (f32[2]{{0}}, s32[]) tuple(a, b), metadata={{op_name="x/y" source_line=3}}
  u = (f32[2]{{0}}, s32[]) tuple(a, b), metadata={{op_name="x/y" source_line=3}}
  w = {_TUPLE6} tuple(a, b, a, b, a, b)
  ROOT r = f32[2]{{0}} get-tuple-element(t), index=0
}}

ENTRY e (p0: f32[2], p1: s32[]) -> f32[2] {{
  p0 = f32[2]{{0}} parameter(0)
  p1 = s32[] parameter(1)
  t2 = (f32[2]{{0}}, s32[]) tuple(p0, p1), frontend_attributes={{k="v"}}
  w2 = {_TUPLE6} tuple(p0, p1, p0, p1, p0, p1)
  g = s32[] get-tuple-element(w2), index=5
  ROOT c = f32[2]{{0}} call(p0, g), to_apply=pair
}}
"""


def test_fast_paths_agree_with_xla() -> None:
    if not xla_available():
        pytest.skip("jaxlib is not importable: XLA's parser is the oracle here")
    assert compare_with_xla(MODULE, "<fast paths>") == []


def test_fast_paths_read_operands_shapes_and_attributes() -> None:
    module = hloscope.load(MODULE)
    validate(module)
    pair, entry = module.computations["pair"], module.computations["e"]
    by_name = {i.name: i for c in (pair, entry) for i in c.instructions}
    assert by_name["u"].operands == ("a", "b")
    assert by_name["u"].shape == by_name["t"].shape
    assert by_name["u"].metadata.op_name == "x/y" and by_name["u"].metadata.source_line == 3
    assert by_name["t2"].operands == ("p0", "p1")
    assert by_name["t2"].frontend_attributes == {"k": "v"}
    assert len(by_name["w2"].shape.tuple_shapes) == 6
    assert by_name["w2"].operands == ("p0", "p1") * 3
    assert by_name["g"].tuple_index == 5
    assert entry.header_parameters == (("p0", "f32[2]"), ("p1", "s32[]"))


def test_simple_attribute_split_gives_each_value() -> None:
    text = (', index=5, backend_config={"a":[{"b":1},{"c":[2,3]}]}, '
            'metadata={op_name="a,b" source_line=3}, sharding={devices=[2,1]0,1}\n')
    values = {key: text[start:end] for key, (start, end) in split_attributes(text, 1).items()}
    assert values == {"index": "5", "backend_config": '{"a":[{"b":1},{"c":[2,3]}]}',
                      "metadata": '{op_name="a,b" source_line=3}',
                      "sharding": "{devices=[2,1]0,1}"}


@pytest.mark.parametrize("text", [', a="x', ", a=1,", ", a=", ", =1"])
def test_malformed_attribute_list_is_refused(text: str) -> None:
    with pytest.raises(TextSyntaxError):
        split_attributes(text, 1)
