"""Malformed programs the semantic checks let through reach the analyses as located errors (exit
4), never as crashes: the ones that crashed before (issue 20)."""
from __future__ import annotations

import pytest

import hloscope
from hloscope.errors import ParseError

_BRANCH = "%b (a: f32[]) -> f32[] {\n  ROOT %a = f32[] parameter(0)\n}\n\n"
NO_BRANCHES = ("HloModule m, is_scheduled=true\n\nENTRY %e (p: f32[]) -> f32[] {\n"
               "  %p = f32[] parameter(0)\n  %i = s32[] constant(0)\n"
               "  ROOT %r = f32[] conditional(%i), branch_computations={}\n}\n")
WHILE_ARITY = ("HloModule m, is_scheduled=true\n\n"
               "%cond (s: (f32[], f32[])) -> pred[] {\n  %s = (f32[], f32[]) parameter(0)\n"
               "  ROOT %t = pred[] constant(true)\n}\n\n"
               "%body (s: (f32[], f32[])) -> (f32[]) {\n  %s = (f32[], f32[]) parameter(0)\n"
               "  %x = f32[] get-tuple-element(%s), index=0\n  ROOT %t = (f32[]) tuple(%x)\n}\n\n"
               "ENTRY %e (p: f32[]) -> (f32[], f32[]) {\n  %p = f32[] parameter(0)\n"
               "  %init = (f32[], f32[]) tuple(%p, %p)\n"
               "  ROOT %w = (f32[], f32[]) while(%init), condition=%cond, body=%body\n}\n")


def test_conditional_without_branches_is_located() -> None:
    module = hloscope.load(NO_BRANCHES)
    with pytest.raises(ParseError) as caught:
        hloscope.flops(module)
    assert caught.value.location.line == 6
    assert "without branch computations" in caught.value.message


def test_while_whose_body_changes_the_tuple_is_located() -> None:
    with pytest.raises(ParseError) as caught:  # XLA's verifier refuses it: so does loading
        hloscope.load(WHILE_ARITY)
    assert caught.value.location.line == 17
    assert "is not that of body's root" in caught.value.message


def test_baseline_cut_at_a_line_end(tmp_path) -> None:  # noqa: ANN001
    baseline = tmp_path / "b.json"
    module = hloscope.load(WHILE_ARITY.replace("(f32[]) tuple(%x)", "(f32[], f32[]) tuple(%x, %x)")
                           .replace("-> (f32[]) {", "-> (f32[], f32[]) {"))
    hloscope.snapshot(module, output=baseline)
    lines = baseline.read_text().splitlines(keepends=True)
    baseline.write_text("".join(lines[: len(lines) // 2]))
    with pytest.raises(ParseError) as caught:
        hloscope.check(module, baseline)
    assert caught.value.exit_code == 4
    assert caught.value.location.source == str(baseline)
