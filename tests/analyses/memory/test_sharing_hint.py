"""libtpu's buffer-sharing hint (`liveness/hints.py`) on hand-built scheduled modules.

The fusion `f` is a kOutput fusion with two outputs, (sum of x, x * p), that reads `x`, a 4 KiB
value dying at `f`. XLA's generic rule (HloDataflowAnalysis::CanShareOperandBufferWithUser)
lets a kOutput fusion share an operand only when its root adds a dot or convolution to it, so
without a hint `f`{1} gets a buffer of its own. libtpu's backend_config
`aliasing_operands` pair ["0","3"] (operand 0; output 3 - 2 operands = {1}) lets it take x's
buffer, as libtpu's buffer assignments show for ResNet's multi-output convolution fusions
(benchmarks/results/tpu_families.txt). The heap simulator still shares only an operand that
dies there: with x read again after `f`, the hint changes nothing.
"""
from __future__ import annotations

from hloscope.analyses.memory.analysis import memory
from hloscope.analyses.memory.heap import estimate_allocation
from hloscope.analyses.memory.liveness import analyze_liveness
from hloscope.analyses.memory.liveness.hints import hinted_pairs
from hloscope.parsers.text import parse_text

_HINT = ', backend_config={"aliasing_operands":{"lists":[{"indices":["0","3"]}]}}'
_X = 16384 * 4
_TABLE = 512  # libtpu's smallest HBM chunk (TPU_GRANULARITY)
_SCALAR = 1024 * 4  # an f32[] without a tile takes 1024 elements in HBM (UNTILED_TILE_ELEMENTS)


def _module(hint: str, x_read_later: bool):
    later = (" t = f32[] reduce(x, c), dimensions={0}, to_apply=add\n"
             " u = f32[] add(s, t)\n ROOT o = f32[] add(u, g0)\n") if x_read_later \
        else " ROOT o = f32[] add(s, g0)\n"
    text = (
        "HloModule m, is_scheduled=true, entry_computation_layout={(f32[16384]{0})->f32[]}\n\n"
        "add (a: f32[], b: f32[]) -> f32[] {\n a = f32[] parameter(0)\n"
        " b = f32[] parameter(1)\n ROOT s = f32[] add(a, b)\n}\n\n"
        "fused (q0: f32[16384], q1: f32[16384]) -> (f32[], f32[16384]) {\n"
        " q0 = f32[16384]{0} parameter(0)\n q1 = f32[16384]{0} parameter(1)\n"
        " z = f32[] constant(0)\n r = f32[] reduce(q0, z), dimensions={0}, to_apply=add\n"
        " m = f32[16384]{0} multiply(q0, q1)\n ROOT t = (f32[], f32[16384]{0}) tuple(r, m)\n}\n\n"
        "ENTRY e (p: f32[16384]) -> f32[] {\n"
        " p = f32[16384]{0} parameter(0)\n x = f32[16384]{0} exponential(p)\n"
        f" f = (f32[], f32[16384]{{0}}) fusion(x, p), kind=kOutput, calls=fused{hint}\n"
        " g0 = f32[] get-tuple-element(f), index=0\n"
        " g1 = f32[16384]{0} get-tuple-element(f), index=1\n"
        " c = f32[] constant(0)\n s = f32[] reduce(g1, c), dimensions={0}, to_apply=add\n"
        + later + "}\n")
    return parse_text(text, source="t.hlo")[0]


def _temp(hint: str, x_read_later: bool = False) -> int:
    module = _module(hint, x_read_later)
    return estimate_allocation(analyze_liveness(module), "tpu").space(0).temp_bytes


def _fusion(hint: str):
    return next(i for i in _module(hint, False).entry.instructions if i.name.lstrip("%") == "f")


def test_the_pair_names_an_operand_and_an_output_after_the_operands() -> None:
    assert hinted_pairs(_fusion(_HINT)) == {(0, (1,))}
    assert hinted_pairs(_fusion("")) == set()


def test_a_hinted_output_fusion_output_takes_its_dying_operands_buffer() -> None:
    """Apart, x and f{1} are both live at f: 2X, then the tuple's 512-byte table. Shared, they
    are one chunk; the reduce's scalar, live with f{1}, goes above it, plus the table."""
    assert _temp("") == 2 * _X + _TABLE
    assert _temp(_HINT) == _X + _SCALAR + _TABLE


def test_the_hint_does_not_share_an_operand_that_is_still_live() -> None:
    """x is read after f, so it does not die there: 2X, the scalar beside them, the table."""
    assert _temp(_HINT, x_read_later=True) == _temp("", x_read_later=True) \
        == 2 * _X + _SCALAR + _TABLE


def _live_peak(hint: str, x_read_later: bool = False) -> int:
    return memory(_module(hint, x_read_later), backend="tpu").all_spaces_peak_bytes


def test_the_live_peak_counts_the_shared_pair_once() -> None:
    """At f the argument p, x and f{1} are live (3X, with f's table and scalar); shared, x and
    f{1} are one buffer there, X less. With x still live after f, nothing changes."""
    assert _live_peak("") - _live_peak(_HINT) == _X
    assert _live_peak(_HINT, x_read_later=True) == _live_peak("", x_read_later=True)
