"""Compare types and iota shapes as XLA's verifier checks them (`checks/verifier_rules.py`),
after the examples of XLA's hlo_verifier_test.cc: each fault refused at its line with exit 4, the
valid forms load."""
from __future__ import annotations

import pytest

import hloscope
from hloscope.errors import ParseError


def _module(root: str) -> str:
    return ("HloModule m\n\nENTRY %e {\n  %f = f32[] parameter(0)\n  %s = s32[] parameter(1)\n"
            f"  %u = u32[] parameter(2)\n  %b = pred[] parameter(3)\n  ROOT %r = {root}\n}}\n")


VALID = [
    "pred[] compare(%f, %f), direction=LT, type=TOTALORDER",
    "pred[] compare(%f, %f), direction=LT, type=FLOAT",
    "pred[] compare(%f, %f), direction=LT",
    "pred[] compare(%s, %s), direction=LT, type=SIGNED",
    "pred[] compare(%u, %u), direction=LT, type=UNSIGNED",
    "pred[] compare(%b, %b), direction=EQ, type=UNSIGNED",
    "s32[4,8] iota(), iota_dimension=1",
    "f32[4] iota(), iota_dimension=0",
]
FAULTS = [
    ("pred[] compare(%f, %f), direction=LT, type=UNSIGNED", "FLOAT or TOTALORDER for f32"),
    ("pred[] compare(%s, %s), direction=LT, type=UNSIGNED", "SIGNED for s32"),
    ("pred[] compare(%u, %u), direction=LT, type=SIGNED", "UNSIGNED for u32"),
    ("pred[] compare(%b, %b), direction=EQ, type=FLOAT", "UNSIGNED for pred"),
    ("() iota(), iota_dimension=0", "iota needs an array result"),
    ("s32[] iota(), iota_dimension=0", "iota needs an array result of rank 1"),
    ("s32[4,8] iota(), iota_dimension=2", "iota_dimension=2 is not a dimension"),
    ("s32[4,8] iota(), iota_dimension=-1", "iota_dimension=-1 is not a dimension"),
    ("pred[4] iota(), iota_dimension=0", "iota does not take pred"),
]


@pytest.mark.parametrize("root", VALID)
def test_valid_forms_load(root: str) -> None:
    hloscope.load(_module(root))


@pytest.mark.parametrize(("root", "message"), FAULTS, ids=[f[0] for f in FAULTS])
def test_fault_refused_at_its_line(root: str, message: str) -> None:
    with pytest.raises(ParseError) as caught:
        hloscope.load(_module(root))
    assert message in caught.value.message
    assert (caught.value.exit_code, caught.value.location.line) == (4, 8)


def _permute(pairs: str) -> str:
    return ("HloModule m\n\nENTRY %e {\n  %p = f32[4] parameter(0)\n"
            "  ROOT %r = f32[4] collective-permute(%p), channel_id=1, "
            f"source_target_pairs={pairs}\n}}\n")


def test_permute_pairs() -> None:
    hloscope.load(_permute("{{0,1},{1,2},{2,0}}"))
    for pairs, message in (("{{0,1},{0,2}}", "Source 0 appears more than once"),
                           ("{{0,2},{1,2}}", "Target 2 appears more than once")):
        with pytest.raises(ParseError, match=message) as caught:
            hloscope.load(_permute(pairs))
        assert caught.value.location.line == 5


_THREADS = """HloModule m

%body (b: f32[4]) -> f32[4] {
  %b = f32[4] parameter(0)
  ROOT %n = f32[4] negate(%b)
}, execution_thread="{body}"

%cond (c: f32[4]) -> pred[] {
  %c = f32[4] parameter(0)
  ROOT %t = pred[] constant(false)
}

ENTRY %e (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0)
  ROOT %w = f32[4] while(%p), condition=%cond, body=%body
}
"""


def test_while_runs_computations_of_its_thread() -> None:
    hloscope.load(_THREADS.replace("{body}", "main"))
    with pytest.raises(ParseError, match="calls body of thread host") as caught:
        hloscope.load(_THREADS.replace("{body}", "host"))
    assert caught.value.location.line == 15


def _entry(body: str) -> str:
    return f"HloModule m\n\nENTRY %e {{\n{body}\n}}\n"


_RNG = "  %a = f32[] constant(0)\n  %b = {b}\n  ROOT %r = {result} rng(%a, %b), distribution={d}"
_SELECT = ("  %k = pred[4] parameter(0)\n  %x = f32[4] parameter(1)\n  %y = {y} parameter(2)\n"
           "  ROOT %r = f32[4] select(%k, %x, %y)")


@pytest.mark.parametrize(("body", "message"), [
    (_RNG.format(b="f16[2] constant({1, 3})", result="f32[10]", d="rng_uniform"),
     "rng's operands must be scalars"),
    (_RNG.format(b="f16[] constant(1)", result="f32[10]", d="rng_normal"),
     "mixed precision is not allowed"),
    (_RNG.format(b="f32[] constant(1)", result="f16[10]", d="rng_normal"),
     "mixed precision is not allowed"),
    (_RNG.replace("f32[] constant(0)", "s32[] constant(0)").format(
        b="s32[] constant(1)", result="s32[10]", d="rng_normal"),
     "rng_normal needs a floating point element type"),
    (_SELECT.format(y="bf16[4]"), "mixed precision is not allowed"),
])
def test_rng_and_select_refused(body: str, message: str) -> None:
    with pytest.raises(ParseError, match=message) as caught:
        hloscope.load(_entry(body))
    assert caught.value.location.line == body.count("\n") + 4


def test_rng_and_select_valid_forms_load() -> None:
    hloscope.load(_entry(_RNG.format(b="f32[] constant(1)", result="f32[10]", d="rng_normal")))
    hloscope.load(_entry(_RNG.replace("f32[] constant(0)", "s32[] constant(0)").format(
        b="s32[] constant(1)", result="s32[10]", d="rng_uniform")))
    hloscope.load(_entry(_SELECT.format(y="f32[4]")))


def test_scheduled_module_may_mix_floating_precisions() -> None:
    """A compiler's scheduled output is verified with mixed precision allowed: libtpu's ResNet
    fusions select bf16 from an f32 operand (benchmarks/tpu_families.py's resnet_bn dumps)."""
    scheduled = _entry(_SELECT.format(y="bf16[4]")).replace("HloModule m",
                                                            "HloModule m, is_scheduled=true")
    hloscope.load(scheduled)
    with pytest.raises(ParseError, match="mixed precision is not allowed"):
        hloscope.load(scheduled.replace("bf16[4]", "s32[4]"))


def test_select_of_tuples_refused() -> None:
    body = ("  %x = (f32[], f32[]) parameter(0)\n  %y = (f32[], f32[]) parameter(1)\n"
            "  %k = pred[] parameter(2)\n  ROOT %r = (f32[], f32[]) select(%k, %x, %y)")
    with pytest.raises(ParseError, match="expected array arguments for select"):
        hloscope.load(_entry(body))


def test_async_start_operands_at_index_0() -> None:
    text = ("HloModule m\n\n%w (a: f32[2,3], b: f32[3,2]) -> f32[3,2] {\n"
            "  %a = f32[2,3] parameter(0)\n  ROOT %b = f32[3,2] parameter(1)\n}\n\n"
            "ENTRY %e {\n  %p = f32[2,3] parameter(0)\n  %q = f32[3,2] parameter(1)\n"
            "  %s = (({held}), f32[3,2], u32[]) async-start(%p, %q), calls=%w\n"
            "  ROOT %d = f32[3,2] async-done(%s)\n}}\n")
    hloscope.load(text.replace("{held}", "f32[2,3], f32[3,2]").replace("}}", "}"))
    with pytest.raises(ParseError, match=r"async shape at index \{0\}") as caught:
        hloscope.load(text.replace("{held}", "f32[3,2], f32[3,2]").replace("}}", "}"))
    assert caught.value.location.line == 11


_COMPOSITE = """HloModule m

%add_n (x: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %c = f32[] constant(2)
  ROOT %z = f32[] add(%x, %c)
}

ENTRY %e {
  %k = f32[] constant(42)
  ROOT %r = f32[] call(%k), is_composite=true, to_apply=%add_n{attributes}
}
"""
_FRONTEND = (", frontend_attributes={composite.attributes={n = 1 : i32},"
             "composite.name=\"foo.bar\",composite.version=\"1\"}")


def test_composite_call_attributes() -> None:
    hloscope.load(_COMPOSITE.replace("{attributes}", _FRONTEND))
    for attributes, message in (
            ("", "must have frontend attributes"),
            (_FRONTEND.replace('composite.name="foo.bar",', ""), "composite.name"),
            (_FRONTEND.replace('version="1"', 'version="-1"'), "non-negative integer")):
        with pytest.raises(ParseError, match=message) as caught:
            hloscope.load(_COMPOSITE.replace("{attributes}", attributes))
        assert caught.value.location.line == 11


_ADD = ("HloModule m\n\n%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
        "  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}\n\n")


def _collective(root: str) -> str:
    return f"{_ADD}ENTRY %e {{\n  %p = f32[8] parameter(0)\n  ROOT %r = {root}\n}}\n"


def test_reduce_scatter_and_global_ids() -> None:
    hloscope.load(_collective("f32[4] reduce-scatter(%p), replica_groups={{0,1}}, "
                              "dimensions={0}, to_apply=%add"))
    for root, message in (
            ("f32[8] reduce-scatter(%p), replica_groups={{0,1}}, dimensions={0}, to_apply=%add",
             "1 shard"),
            ("f32[4] reduce-scatter(%p), replica_groups={{0,1}}, dimensions={1}, to_apply=%add",
             "scatter dimension 1 is not a dimension"),
            ("f32[4] reduce-scatter(%p), replica_groups={{0,1},{2,3,4}}, dimensions={0}, "
             "to_apply=%add", "uniform size"),
            ("f32[8] all-reduce(%p), replica_groups={}, channel_id=1, use_global_device_ids=true, "
             "to_apply=%add", "replica groups must be specified")):
        with pytest.raises(ParseError, match=message) as caught:
            hloscope.load(_collective(root))
        assert caught.value.location.line == 11


def test_unbounded_dimension_kept() -> None:
    # XLA's default verifier refuses f32[?] ("Unbounded dynamism is disabled"), but its
    # translation tests hold such modules (the corpus's hlo_to_mhlo import.hlo): hloscope loads it.
    assert hloscope.load(_entry("  ROOT %p = f32[?,784] parameter(0)")).entry_name == "e"


def test_scatter_dims_to_operand_dims_within_the_operand() -> None:
    text = (f"{_ADD}ENTRY %e {{\n  %o = f32[4,4] parameter(0)\n  %i = s32[2,1] parameter(1)\n"
            "  %u = f32[2,4] parameter(2)\n  ROOT %r = f32[4,4] scatter(%o, %i, %u), "
            "update_window_dims={1}, inserted_window_dims={0}, "
            "scatter_dims_to_operand_dims={DIM}, index_vector_dim=1, to_apply=%add\n}\n")
    hloscope.load(text.replace("DIM", "0"))
    with pytest.raises(ParseError, match="invalid scatter_dims_to_operand_dims") as caught:
        hloscope.load(text.replace("DIM", "7"))
    assert caught.value.location.line == 13


_GROWING_LOOP = """HloModule m

body {
  p = (f32[2], f32[2]) parameter(0)
  a = f32[2] get-tuple-element(p), index=0
  ROOT r = (f32[2], f32[2], f32[2]) tuple(a, a, a)
}

cond {
  p = (f32[2], f32[2]) parameter(0)
  ROOT t = pred[] constant(true)
}

ENTRY e {
  c = f32[2] constant({1, 2})
  init = (f32[2], f32[2]) tuple(c, c)
  ROOT w = (f32[2], f32[2], f32[2]) while(init), condition=cond, body=body
}
"""


def test_while_operand_need_not_be_the_loop_shape() -> None:
    """XLA's ShapeVerifier::HandleWhile checks the operand against each callee's parameter and
    the loop's shape against the body's root, never the operand against the loop's shape
    (while_loop_constant_sinking_test's DontCreateDeadConstant verifies such a loop)."""
    assert hloscope.load(_GROWING_LOOP).entry.root.shape.tuple_shapes[2].dimensions == (2,)
    with pytest.raises(ParseError, match="is not that of body's root"):
        hloscope.load(_GROWING_LOOP.replace("ROOT w = (f32[2], f32[2], f32[2])",
                                            "ROOT w = (f32[2], f32[2])"))
