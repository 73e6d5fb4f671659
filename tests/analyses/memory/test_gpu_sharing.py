"""XLA:GPU's fusion sharing hint (`liveness/gpu_hints.py`) on hand-built scheduled modules.

In each module a value `d`, made in the program, dies at the fusion `f`; the entry parameters
live throughout and the entry output is a scalar, so at `f` the live set is the parameters, `d`,
`f`'s outputs and its tuple's 16-byte pointer table. Where XLA:GPU's FusionCanShareBufferHint
(xla/service/gpu/alias_info.cc) says yes, one output is made in `d`'s buffer and the live peak
counts the two once; where it says no, both count. The pairs differ in the one fact the rule
reads. The shapes are those seen in XLA:GPU's buffer assignments of llama-1b (bf16[8192,8192]
taking the buffer of a bf16[4,2048,8192] output through a bitcast; an f32 select output beside
its fusion's hero reduction), here scaled down.
"""
from __future__ import annotations

from hloscope.analyses.memory.analysis import memory
from hloscope.parsers.text import parse_text

_TABLE = 16  # a 2-element tuple's pointer table on GPU


def _reduction_module(columns: int):
    """kInput fusion: (reduce of d over its rows, exp(d)); d is f32[64,columns]."""
    x = f"f32[64,{columns}]"
    text = (
        f"HloModule m, is_scheduled=true, entry_computation_layout={{({x}{{1,0}})->f32[]}}\n\n"
        "add (a: f32[], b: f32[]) -> f32[] {\n a = f32[] parameter(0)\n"
        " b = f32[] parameter(1)\n ROOT s = f32[] add(a, b)\n}\n\n"
        f"fused (q0: {x}) -> (f32[64], {x}) {{\n"
        f" q0 = {x}{{1,0}} parameter(0)\n z = f32[] constant(0)\n"
        " r = f32[64]{0} reduce(q0, z), dimensions={1}, to_apply=add\n"
        f" e = {x}{{1,0}} exponential(q0)\n"
        f" ROOT t = (f32[64]{{0}}, {x}{{1,0}}) tuple(r, e)\n}}\n\n"
        f"ENTRY e (p: {x}) -> f32[] {{\n p = {x}{{1,0}} parameter(0)\n"
        f" d = {x}{{1,0}} negate(p)\n"
        f" f = (f32[64]{{0}}, {x}{{1,0}}) fusion(d), kind=kInput, calls=fused\n"
        " g0 = f32[64]{0} get-tuple-element(f), index=0\n"
        f" g1 = {x}{{1,0}} get-tuple-element(f), index=1\n c = f32[] constant(0)\n"
        " s = f32[] reduce(g1, c), dimensions={0,1}, to_apply=add\n"
        " t = f32[] reduce(g0, c), dimensions={0}, to_apply=add\n ROOT o = f32[] add(s, t)\n}\n")
    return parse_text(text, source="reduction.hlo")[0]


def _bitcast_module(transposed: bool):
    """kLoop fusion of d (bf16[64,64]) and q (bf16[4,16,64]): d bitcast to q's shape, m = d*q,
    outputs (m + q, or m transposed; m * d)."""
    first = "bf16[4,64,16]" if transposed else "bf16[4,16,64]"
    make_first = (f" n = {first}{{2,1,0}} transpose(m), dimensions={{0,2,1}}\n" if transposed
                  else " n = bf16[4,16,64]{2,1,0} add(m, b)\n")
    table = f"({first}{{2,1,0}}, bf16[4,16,64]{{2,1,0}})"
    text = (
        "HloModule m, is_scheduled=true, entry_computation_layout="
        "{(bf16[64,64]{1,0}, bf16[4,16,64]{2,1,0})->bf16[]}\n\n"
        "add (a: bf16[], b: bf16[]) -> bf16[] {\n a = bf16[] parameter(0)\n"
        " b = bf16[] parameter(1)\n ROOT s = bf16[] add(a, b)\n}\n\n"
        f"fused (q0: bf16[64,64], q1: bf16[4,16,64]) -> {table} {{\n"
        " q0 = bf16[64,64]{1,0} parameter(0)\n b = bf16[4,16,64]{2,1,0} parameter(1)\n"
        " c = bf16[4,16,64]{2,1,0} bitcast(q0)\n m = bf16[4,16,64]{2,1,0} multiply(c, b)\n"
        + make_first +
        " o = bf16[4,16,64]{2,1,0} multiply(m, c)\n"
        f" ROOT t = {table} tuple(n, o)\n}}\n\n"
        "ENTRY e (p: bf16[64,64], q: bf16[4,16,64]) -> bf16[] {\n"
        " p = bf16[64,64]{1,0} parameter(0)\n q = bf16[4,16,64]{2,1,0} parameter(1)\n"
        " d = bf16[64,64]{1,0} negate(p)\n"
        f" f = {table} fusion(d, q), kind=kLoop, calls=fused\n"
        f" g0 = {first}{{2,1,0}} get-tuple-element(f), index=0\n"
        " g1 = bf16[4,16,64]{2,1,0} get-tuple-element(f), index=1\n c = bf16[] constant(0)\n"
        " s = bf16[] reduce(g0, c), dimensions={0,1,2}, to_apply=add\n"
        " t = bf16[] reduce(g1, c), dimensions={0,1,2}, to_apply=add\n"
        " ROOT o = bf16[] add(s, t)\n}\n")
    return parse_text(text, source="bitcast.hlo")[0]


def test_an_output_beside_the_hero_reduction_takes_the_dying_operands_buffer() -> None:
    """f32[64,64] reduced over 64 contiguous columns is a real reduction hero (a row reduction
    at least a warp wide): the reduction emitter reads d before writing exp(d) over it. Live at
    f: p, d = f{1} once, f{0} (f32[64]) and the table."""
    x = 64 * 64 * 4
    result = memory(_reduction_module(64), backend="gpu")
    assert result.peak_instruction == "f"
    assert result.peak_bytes == 2 * x + 64 * 4 + _TABLE
    assert result.unshared_peak_bytes == 3 * x + 64 * 4 + _TABLE


def test_a_reduction_the_loop_emitter_runs_shares_nothing() -> None:
    """5 columns are narrower than a warp and do not divide it: not a real reduction hero, so the
    loop emitter runs the fusion, and the reduce on d's path is not elementwise: p, d and f{1}
    all count."""
    x = 64 * 5 * 4
    result = memory(_reduction_module(5), backend="gpu")
    assert result.peak_bytes == result.unshared_peak_bytes == 3 * x + 64 * 4 + _TABLE


def test_an_output_of_another_shape_takes_the_buffer_through_a_bitcast() -> None:
    """d (bf16[64,64]) reaches both outputs (bf16[4,16,64]: as many 16-bit elements) through a
    bitcast and elementwise ops: one output is made in d's buffer. Live at f: p, q, d and the
    two outputs, one of them in d's buffer, and the table."""
    x = 64 * 64 * 2
    result = memory(_bitcast_module(transposed=False), backend="gpu")
    assert result.peak_bytes == 4 * x + _TABLE
    assert result.unshared_peak_bytes == 5 * x + _TABLE


def test_a_reached_transposing_root_refuses_the_buffer() -> None:
    """The first output is m transposed: its iteration order is not d's, and the walk from d
    reaches it, so neither output may take d's buffer."""
    x = 64 * 64 * 2
    result = memory(_bitcast_module(transposed=True), backend="gpu")
    assert result.peak_bytes == result.unshared_peak_bytes == 5 * x + _TABLE


def test_other_backends_keep_their_equal_shape_rule() -> None:
    """XLA's generic rule (CPU) shares only equal shapes: the bitcast pair stays apart."""
    result = memory(_bitcast_module(transposed=False), backend="cpu")
    assert result.peak_bytes == result.unshared_peak_bytes
