"""Shapes: sizes against closed forms, and parsing against XLA's own parser (hypothesis)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xla_oracle import same_shape, xla_available, xla_parse

from hloscope.model.shape_text import TextSyntaxError, parse_shape


@pytest.mark.parametrize(
    ("text", "byte_size", "padded"),
    [
        ("f32[2,3]{1,0}", 24, 24),
        ("f32[2,3]", 24, 24),
        ("bf16[8,128]{1,0:T(8,128)(2,1)}", 2048, 2048),
        ("bf16[3,5]{1,0:T(8,128)(2,1)}", 30, 8 * 128 * 2),
        ("f32[4096,4]{0,1:T(4,128)}", 4096 * 4 * 4, 4096 * 4 * 4),  # physical [4,4096]
        ("f32[4,4096]{0,1:T(4,128)}", 4 * 4096 * 4, 4096 * 128 * 4),  # physical [4096,4]
        ("f32[]{:T(128)}", 4, 128 * 4),
        ("s4[1024]{0:E(4)}", 512, 512),
        ("s4[1024]", 1024, 1024),
        ("u2[5]{0:E(2)}", 2, 2),
        ("pred[3]", 3, 3),
        ("c128[2]", 32, 32),
        ("f8e4m3fn[7]", 7, 7),
        ("f4e2m1fn[8]{0:E(4)}", 4, 4),
        ("token[]", 0, 0),
        ("(f32[2], s32[], (bf16[4], token[]))", 8 + 4 + 8, 8 + 4 + 8),
        ("f32[<=5,3]", 60, 60),
        ("f32[2,3]{1,0:S(1)}", 24, 24),
    ],
)
def test_byte_sizes(text: str, byte_size: int, padded: int) -> None:
    shape = parse_shape(text)
    assert shape.byte_size == byte_size
    assert shape.padded_byte_size == padded


def test_shape_parts() -> None:
    shape = parse_shape("bf16[8,<=128]{0,1:T(8,128)(2,1)S(1)}")
    assert shape.element_type == "bf16"
    assert shape.dimensions == (8, 128)
    assert shape.dynamic_dimensions == (False, True)
    assert shape.layout.minor_to_major == (0, 1)
    assert shape.layout.tiles == ((8, 128), (2, 1))
    assert shape.memory_space == 1
    assert str(shape) == "bf16[8,<=128]{0,1:T(8,128)(2,1)S(1)}"


def test_tuple_leaves_and_written_with_spaces() -> None:
    shape = parse_shape("(f32[256, 512], (s32[], /*index=1*/u8[3]))")
    assert [index for index, _ in shape.leaves()] == [(0,), (1, 0), (1, 1)]
    assert shape.tuple_shapes[0].dimensions == (256, 512)


@pytest.mark.parametrize("bad", ["f33[2]", "f32[2", "f32[a]", "f32[2]{1,0}", "(f32[2],", "f32[2]x"])
def test_bad_shapes_are_refused(bad: str) -> None:
    with pytest.raises(TextSyntaxError):
        parse_shape(bad)


_SUB_BYTE = {"s1": 1, "u1": 1, "s2": 2, "u2": 2, "s4": 4, "u4": 4, "f4e2m1fn": 4}
_TYPES = ["pred", "s8", "s16", "s32", "s64", "u8", "u32", "bf16", "f16", "f32", "f64", "c64",
          "c128", "f8e4m3fn", "f8e5m2", *_SUB_BYTE]


@st.composite
def array_shapes(draw: st.DrawFn) -> str:
    element_type = draw(st.sampled_from(_TYPES))
    rank = draw(st.integers(0, 4))
    dims = draw(st.lists(st.integers(0, 300), min_size=rank, max_size=rank))
    dynamic = draw(st.booleans()) and rank > 0
    dim_text = ",".join(("<=" if dynamic and i == 0 else "") + str(d) for i, d in enumerate(dims))
    text = f"{element_type}[{dim_text}]"
    if not draw(st.booleans()):
        return text
    order = draw(st.permutations(list(range(rank))))
    items = ""
    if not dynamic and draw(st.booleans()):
        items += draw(st.sampled_from(["T(8,128)", "T(8,128)(2,1)", "T(128)", "T(4,128)",
                                       "T(1024)"]))
    if element_type in _SUB_BYTE and draw(st.booleans()):
        items += f"E({_SUB_BYTE[element_type]})"
    if draw(st.booleans()):
        items += f"S({draw(st.sampled_from([1, 2, 5]))})"
    if rank == 0 and not items:
        return text  # XLA's parser refuses an empty layout `{}` on a scalar
    return text + "{" + ",".join(map(str, order)) + (":" + items if items else "") + "}"


shapes = st.recursive(array_shapes(), lambda inner: st.lists(inner, max_size=3).map(
    lambda parts: "(" + ", ".join(parts) + ")"), max_leaves=5)


@pytest.mark.skipif(not xla_available(), reason="jaxlib is not importable: XLA is the oracle")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes)
def test_shape_parse_equals_xla(text: str) -> None:
    module = f"HloModule m\n\nENTRY e {{\n  ROOT p = {text} parameter(0)\n}}\n"
    printed = xla_parse(module)["e"][0].shape_text
    assert same_shape(parse_shape(printed), parse_shape(text)), (text, printed)
