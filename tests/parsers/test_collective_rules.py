"""Collective-permute (in place, start and done), ragged-all-to-all and scaled-dot rules of XLA's
verifier (`checks/collective_rules.py`, `checks/dot_rules.py`), on hand-built modules after the
examples of XLA's hlo_verifier_test.cc: each fault refused at its line and column with exit 4,
the valid form loads, and a lenient load lets the fault through."""
from __future__ import annotations

from located_refusal import assert_refused_at as _refused

import hloscope

_OFFSET = "(s32[],s32[],s32[])"
_OFFSETS = f"({_OFFSET}, {_OFFSET})"


def _inplace(input_offsets: str, output_offsets: str, pairs: str) -> str:
    return (
        "HloModule m\n\nENTRY %e {\n"
        "  %a = u32[2,8,128] parameter(0)\n"
        "  %b = u32[2,8,128] parameter(1)\n"
        "  %z = s32[] constant(0)\n"
        f"  %o = {_OFFSET} tuple(%z, %z, %z)\n"
        "  %o2 = (s32[],s32[]) tuple(%z, %z)\n"
        f"  %t = {_OFFSETS} tuple(%o, %o)\n"
        f"  ROOT %r = u32[2,8,128] collective-permute(%a, %b, {input_offsets}, {output_offsets}), "
        f"source_target_pairs={pairs}, slice_sizes={{{{1,8,128}},{{1,8,128}}}}\n}}\n")


def test_inplace_permute_names_a_source_once_per_offset() -> None:
    hloscope.load(_inplace("%t", "%t", "{{0,1},{1,0},{0,1},{1,0}}"))
    _refused(_inplace("%t", "%t", "{{0,1},{1,0},{0,2},{0,3}}"),
             "Source 0 appears more than 2 times in instruction's source-target pairs", 10,
             "source_target_pairs")
    _refused(_inplace("%t", "%t", "{{0,1},{1,3},{2,3},{0,3}}"),
             "Target 3 appears more than 2 times", 10, "source_target_pairs")


def test_inplace_permute_offsets_match_the_buffers() -> None:
    hloscope.load(_inplace("%o", "%o", "{{0,1}}"))  # one index per dimension, or tuples of them
    _refused(_inplace("%z", "%t", "{{0,1}}"), "Buffer offset is not tuple.", 10, "%a, %b")
    _refused(_inplace("%t", "%o2", "{{0,1}}"), "Buffer offset index should have the same number "
             "of elements as the buffer's rank", 10, "%a, %b")


def _tuple_inplace(input_offsets: str, output_offsets: str, outputs: str = "%bb") -> str:
    return (
        "HloModule m\n\nENTRY %e {\n"
        "  %a = u32[2,8] parameter(0)\n"
        "  %b = u32[4,8] parameter(1)\n"
        "  %aa = (u32[2,8], u32[2,8]) tuple(%a, %a)\n"
        "  %bb = (u32[2,8], u32[4,8]) tuple(%a, %b)\n"
        "  %z = s32[] constant(0)\n"
        "  %o = (s32[],s32[]) tuple(%z, %z)\n"
        "  %t = ((s32[],s32[]), (s32[],s32[])) tuple(%o, %o)\n"
        "  %tt = (((s32[],s32[]), (s32[],s32[])), ((s32[],s32[]), (s32[],s32[]))) tuple(%t, %t)\n"
        f"  ROOT %r = (u32[2,8], u32[4,8]) collective-permute(%aa, {outputs}, {input_offsets}, "
        f"{output_offsets}), source_target_pairs={{{{0,1}},{{1,0}}}}, "
        "slice_sizes={{1,8},{1,8},{2,8},{2,8}}\n}\n")


def test_tuple_inplace_permute_buffers_and_offsets_match() -> None:
    hloscope.load(_tuple_inplace("%tt", "%tt"))
    _refused(_tuple_inplace("%tt", "%tt", "%a"),
             "Unmatching input buffers and output buffers.", 12, "%aa, ")
    _refused(_tuple_inplace("%z", "%tt"), "Unmatching input buffers and input offset.", 12, "%aa")
    _refused(_tuple_inplace("%tt", "%z"), "Unmatching output buffers and output offset.", 12,
             "%aa")


_START = ("HloModule m\n\nENTRY %e {{\n  %p = f32[2,3] parameter(0)\n"
          "  %s = {start} collective-permute-start(%p), source_target_pairs={{{{0,1}},{{1,0}}}}, "
          "channel_id=1\n"
          "  ROOT %d = {done} collective-permute-done(%s)\n}}\n")


def test_permute_start_and_done_shapes() -> None:
    hloscope.load(_START.format(start="(f32[2,3], f32[2,3])", done="f32[2,3]"))
    hloscope.load(_START.format(start="(f32[2,3], f32[2,3], u32[], u32[])", done="f32[2,3]"))
    _refused(_START.format(start="f32[2,3]", done="f32[2,3]"),
             "Expected instruction to have shape equal to (f32[2,3], f32[2,3])", 5, "%p)")
    _refused(_START.format(start="(f32[2,3], f32[3,2])", done="f32[3,2]"),
             "Expected instruction to have shape equal to (f32[2,3], f32[2,3])", 5, "%p)")
    _refused(_START.format(start="(f32[2,3], f32[2,3])", done="f32[3,2]"),
             "Expected instruction to have shape equal to f32[2,3]", 6, "%s)")


def _ragged(offsets: str, sizes: str) -> str:
    return ("HloModule m\n\nENTRY %e {\n  %i = bf16[4,16] parameter(0)\n"
            "  %o = bf16[4,16] parameter(1)\n"
            f"  %io = {offsets} parameter(2)\n  %ss = {sizes} parameter(3)\n"
            f"  %oo = {offsets} parameter(4)\n  %rs = {sizes} parameter(5)\n"
            "  ROOT %r = bf16[4,16] ragged-all-to-all(%i, %o, %io, %ss, %oo, %rs), "
            "replica_groups={{0,1,2,3}}\n}\n")


def test_ragged_all_to_all_offsets_and_sizes() -> None:
    hloscope.load(_ragged("s32[4]", "s32[4]"))
    hloscope.load(_ragged("s64[4,2]", "s64[4,2]"))
    _refused(_ragged("s32[4,2,2]", "s32[4,2,2]"), "RaggedAllToAll operand 2 must be rank 1 or 2",
             10, "%i, %o")
    _refused(_ragged("s32[4,2]", "s32[4]"), "RaggedAllToAll operands have different shapes (2, 3)",
             10, "%i, %o")


def _scaled(a: str, b: str, a_scale: str, b_scale: str) -> str:
    return ("HloModule m\n\nENTRY %e {\n"
            f"  %a = {a}[2,10] parameter(0)\n  %b = {b}[10,2] parameter(1)\n"
            f"  %sa = {a_scale} parameter(2)\n  %sb = {b_scale} parameter(3)\n"
            "  ROOT %d = f32[2,2] scaled-dot(%a, %b, %sa, %sb), lhs_contracting_dims={1}, "
            "rhs_contracting_dims={0}\n}\n")


def test_scaled_dot_scales() -> None:
    hloscope.load(_scaled("f8e5m2", "f8e8m0fnu", "f8e5m2[2,2]", "f8e8m0fnu[2,2]"))
    hloscope.load(_scaled("bf16", "bf16", "bf16[]", "bf16[1,2]"))  # a no-op lhs scale
    _refused(_scaled("bf16", "bf16", "bf16[]", "bf16[]"),
             "At least one of the scales should be not a scalar", 8, "%a, %b")
    _refused(_scaled("f32", "f32", "f32[2,2,2]", "f32[2,2,2]"),
             "Scale operand sa has a different number of dimensions than operand a", 8, "%a, %b")
    _refused(_scaled("f32", "f32", "f32[2,6]", "f32[6,2]"),
             "Dimension 1 of operand a (f32[2,10]) should be a multiple of dimension 1", 8,
             "%a, %b")
