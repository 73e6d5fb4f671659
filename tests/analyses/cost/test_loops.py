"""While loops: trip counts read or inferred, bodies multiplied by them, and compiled scans cost
what the same programs cost unrolled (XLA's cost_analysis of the unrolled program)."""
from __future__ import annotations

import json
import operator
import os
import subprocess
import sys

import pytest
from conftest import ORACLES

import hloscope
from hloscope.analyses.cost import CostAnalysis, CostOptions
from hloscope.analyses.cost.flops import flops

_COMPARE = {"LT": operator.lt, "LE": operator.le, "GT": operator.gt, "GE": operator.ge,
            "NE": operator.ne}


def loop_module(start: int, limit: int, step: int, direction: str, *, swapped: bool = False,
                fused_compare: bool = False, annotation: str = "") -> str:
    """A counted loop whose body does a 16x16 dot and the counter update (8193 FLOPs) per
    iteration, and whose condition one compare (1 FLOP) per evaluation."""
    update = "add" if step >= 0 else "subtract"
    compare_operands = "n, i" if swapped else "i, n"
    flipped = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "NE": "NE"}
    written = flipped[direction] if swapped else direction
    compare = f"ROOT c = pred[] compare({compare_operands}), direction={written}"
    fused = ""
    if fused_compare:
        fused = (f"is_done {{\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n"
                 f"  ROOT c = pred[] compare(a, b), direction={direction}\n}}\n")
        compare = "ROOT c = pred[] fusion(i, n), kind=kLoop, calls=is_done"
    return f"""HloModule loop
{fused}cond {{
  s = (s32[], f32[16,16]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant({limit})
  {compare}
}}
body {{
  s = (s32[], f32[16,16]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[16,16] get-tuple-element(s), index=1
  k = s32[] constant({abs(step)})
  j = s32[] {update}(i, k)
  y = f32[16,16] dot(x, x), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  ROOT t = (s32[], f32[16,16]) tuple(j, y)
}}
ENTRY e {{
  x = f32[16,16] parameter(0)
  z = s32[] constant({start})
  t = (s32[], f32[16,16]) tuple(z, x)
  ROOT w = (s32[], f32[16,16]) while(t), condition=cond, body=body{annotation}
}}
"""


def simulated_trips(start: int, limit: int, step: int, direction: str) -> int:
    count, value = 0, start
    while _COMPARE[direction](value, limit):
        value += step
        count += 1
    return count


@pytest.mark.parametrize(("start", "limit", "step", "direction"), [
    (0, 10, 1, "LT"), (0, 10, 3, "LT"), (2, 10, 2, "LE"), (10, 0, -1, "GT"), (10, 1, -3, "GE"),
    (0, 12, 4, "NE"), (5, 5, 1, "LT"), (-3, 4, 2, "LT"),
])
@pytest.mark.parametrize("variant", ["plain", "swapped", "fused"])
def test_inferred_trip_count_matches_the_loop(start, limit, step, direction, variant) -> None:
    text = loop_module(start, limit, step, direction, swapped=variant == "swapped",
                       fused_compare=variant == "fused")
    trips = simulated_trips(start, limit, step, direction)
    result = flops(hloscope.load(text))
    assert [(loop.trip_count, loop.source) for loop in result.loops] == [(trips, "inferred")]
    assert result.total.flops == 8193 * trips + (trips + 1)


def test_annotated_trip_count_wins() -> None:
    text = loop_module(0, 10, 1, "LT",
                       annotation=', backend_config={"known_trip_count":{"n":"4"}}')
    result = flops(hloscope.load(text))
    assert [(loop.trip_count, loop.source) for loop in result.loops] == [(4, "backend_config")]
    assert result.total.flops == 4 * 8193 + 5


def test_unknown_trip_count_counts_once_and_is_reported() -> None:
    text = loop_module(0, 10, 1, "LT").replace("z = s32[] constant(0)", "z = s32[] parameter(1)")
    analysis = CostAnalysis(hloscope.load(text))
    result = flops(analysis)
    assert [(loop.trip_count, loop.source) for loop in result.loops] == [(1, "unknown")]
    assert result.total.flops == 8193 + 2
    assert [u.instruction for u in analysis.unknown_loops] == ["w"]


def test_xla_conventions_count_the_body_once() -> None:
    result = flops(hloscope.load(loop_module(0, 10, 1, "LT")), options=CostOptions.like_xla())
    assert result.total.flops == 8193 + 1 and not result.trip_counts_applied


@pytest.fixture(scope="module")
def compiled_loops(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("loops") / "loops.json"
    environment = {**os.environ, "JAX_PLATFORMS": "cpu"}
    subprocess.run([sys.executable, str(ORACLES / "compiled_loops.py"), str(out)], check=True,
                   env=environment, capture_output=True, timeout=300)
    return json.loads(out.read_text())


@pytest.mark.compile
@pytest.mark.parametrize("program", ["layers", "fori", "nested", "grad_of_scan"])
def test_scan_costs_what_the_unrolled_program_costs(compiled_loops, program) -> None:
    compiled = compiled_loops[program]
    result = flops(hloscope.load(compiled["looped_hlo"]))
    assert result.loops and all(loop.source != "unknown" for loop in result.loops)
    assert result.total.flops == pytest.approx(compiled["unrolled_flops"], rel=0.02)
    assert result.total.transcendentals == pytest.approx(compiled["unrolled_transcendentals"],
                                                         rel=0.02)


_COPIED_COUNTER = """HloModule m, is_scheduled=true

%cond (s: (s32[], f32[4])) -> pred[] {
  %s = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(5)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (s: (s32[], f32[4])) -> (s32[], f32[4]) {
  %s = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[4] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %y = f32[4] add(%x, %x)
  ROOT %t = (s32[], f32[4]) tuple(%next, %y)
}

ENTRY %main (p: f32[4]) -> (s32[], f32[4]) {
  %p = f32[4] parameter(0)
  %zero = s32[] constant(0)
  %start = s32[] copy(%zero)
  %init = (s32[], f32[4]) tuple(%start, %p)
  ROOT %w = (s32[], f32[4]) while(%init), condition=%cond, body=%body
}
"""


def test_trip_count_inferred_through_a_copied_counter() -> None:
    """libtpu writes the counter's start as copy(constant(0)) and no known_trip_count."""
    import hloscope

    result = hloscope.flops(hloscope.load(_COPIED_COUNTER))
    (loop,) = result.loops
    assert (loop.trip_count, loop.source) == (5, "inferred")
    # body: 4 + 1 adds per iteration x 5; condition: 1 compare x 6 evaluations
    assert result.total.flops == 5 * 5 + 6


def test_trip_count_inferred_through_a_copied_step() -> None:
    """libtpu also copies the counter inside the body before adding the step."""
    import hloscope

    text = _COPIED_COUNTER.replace(
        "  %next = s32[] add(%i, %one)",
        "  %moved = s32[] copy(%i)\n  %next = s32[] add(%moved, %one)")
    (loop,) = hloscope.flops(hloscope.load(text)).loops
    assert (loop.trip_count, loop.source) == (5, "inferred")


def test_trip_count_inferred_through_a_copied_update() -> None:
    """libtpu's windowed einsum loops copy the updated counter before the root tuple."""
    import hloscope

    text = _COPIED_COUNTER.replace(
        "  %next = s32[] add(%i, %one)",
        "  %added = s32[] add(%i, %one)\n  %next = s32[] copy(%added)")
    (loop,) = hloscope.flops(hloscope.load(text)).loops
    assert (loop.trip_count, loop.source) == (5, "inferred")
