"""Sharding and original-value rules of XLA's verifier (`checks/sharding_rules.py`,
`checks/original_value.py`), on hand-built modules after the examples of XLA's
hlo_verifier_test.cc: a tiled sharding's rank, one sharding for a while or conditional and the
instructions of its computations, an original value of its instruction's tuple structure. Each
fault refused at its attribute with exit 4, the valid forms load, and a lenient load lets the
fault through."""
from __future__ import annotations

import pytest
from located_refusal import assert_refused_at

import hloscope
from hloscope.errors import ParseError


def _refused(text: str, message: str, line: int) -> None:
    """Refused with `message` at `line`, at its `sharding=`."""
    assert_refused_at(text, message, line, "sharding=")


def _parameter(sharding: str) -> str:
    return ("HloModule m\n\nENTRY %e {\n"
            f"  %p = f32[4,2] parameter(0), sharding={sharding}\n"
            "  ROOT %r = f32[4,2] copy(%p)\n}\n")


@pytest.mark.parametrize("sharding", [
    "{devices=[2,2]0,1,2,3}", "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}",
    "{devices=[2,1,2]<=[4] last_tile_dims={manual}}", "{replicated}", "{maximal device=0}",
    "{devices=[1,2,2,1]<=[4] last_tile_dims={manual, replicated}}",
])
def test_tiled_sharding_of_the_arrays_rank_loads(sharding: str) -> None:
    hloscope.load(_parameter(sharding))


@pytest.mark.parametrize("sharding", [
    "{devices=[1,2,2,1]0,1,2,3}", "{devices=[4]0,1,2,3}",
    "{devices=[2,1,2]0,1,2,3}", "{devices=[2,2,1]<=[4] last_tile_dims={manual, replicated}}",
])
def test_tiled_sharding_of_another_rank_refused(sharding: str) -> None:
    _refused(_parameter(sharding), "Number of tile assignment dimensions (excluding subgroups) "
             "is different than the input rank", 4)


_WHILE = """HloModule m

%body (b: s32[]) -> s32[] {
  %b = s32[] parameter(0), sharding={body}
  %one = s32[] constant(1)
  ROOT %add = s32[] add(%one, %b)
}

%cond (c: s32[]) -> pred[] {
  %c = s32[] parameter(0), sharding={cond}
  %five = s32[] constant(5)
  ROOT %gt = pred[] compare(%five, %c), direction=GT
}

ENTRY %e () -> s32[] {
  %zero = s32[] constant(0)
  ROOT %w = s32[] while(%zero), condition=%cond, body=%body
}
"""


def _while(body: str, cond: str) -> str:
    return _WHILE.replace("{body}", body).replace("{cond}", cond)


def test_while_shares_one_sharding() -> None:
    hloscope.load(_while("{replicated}", "{ replicated }"))
    hloscope.load(_while("{maximal device=0 metadata={op_name=\"a\"}}", "{maximal device=0}"))
    _refused(_while("{replicated}", "{maximal device=0}"),
             "Inconsistent while sharding among instructions", 10)


_CONDITIONAL = """HloModule m

%t (tp: (s32[], f32[4])) -> f32[4] {
  %tp = (s32[], f32[4]) parameter(0)
  ROOT %tg = f32[4] get-tuple-element(%tp), index=1
}

%f (fp: (s32[], f32[4])) -> f32[4] {
  %fp = (s32[], f32[4]) parameter(0)
  ROOT %fg = f32[4] get-tuple-element(%fp), index=1, sharding={branch}
}

ENTRY %e {
  %p = (s32[], f32[4]) parameter(0)
  %k = pred[] constant(true)
  ROOT %c = f32[4] conditional(%k, %p, %p), true_computation=%t, false_computation=%f,
    sharding={maximal device=0}
}
"""


def test_conditional_shares_one_sharding() -> None:
    hloscope.load(_CONDITIONAL.replace("{branch}", "{maximal device=0}"))
    _refused(_CONDITIONAL.replace("{branch}", "{replicated}"),
             "Inconsistent conditional sharding among instructions", 10)


def _origin(shape: str, origin: str) -> str:
    return f"HloModule m\n\nENTRY %e {{\n  ROOT %op = {shape} parameter(0), origin={origin}\n}}\n"


@pytest.mark.parametrize(("shape", "origin"), [
    ("f32[]", '{{"p"}}'), ("((f32[], f32[3]), f32[2,3])", '{(({}, {"v2"}), {"v3"})}'),
    ("(f32[], f32[])", '{({"a" {1}}, {"b"})}'), ("(f32[], f32[])", "{[synthetic_call]}"),
])
def test_original_value_of_the_shapes_structure_loads(shape: str, origin: str) -> None:
    hloscope.load(_origin(shape, origin))


@pytest.mark.parametrize(("shape", "origin"), [
    ("f32[]", '{(({}, {"v2"}), {"v3"})}'), ("(f32[], f32[])", '{{"p"}}'),
    ("(f32[], (f32[], f32[]))", '{({"a"}, {"b"})}'),
])
def test_original_value_of_another_structure_refused(shape: str, origin: str) -> None:
    text = _origin(shape, origin)
    with pytest.raises(ParseError) as caught:
        hloscope.load(text)
    assert "Mismatched tuple structure in original_value" in caught.value.message
    assert (caught.value.exit_code, caught.value.location.line) == (4, 4)
    assert caught.value.location.column == text.splitlines()[3].index("origin=") + 1
    hloscope.load(text, lenient=True)
