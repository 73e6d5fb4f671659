"""The span of a program's layer loops and its live peak: a hand-built module whose peak is after
its loops, and the CPU compiles of `oracles/scanned_programs.py` (scanned, unrolled, nested and
micro-batched layers)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import compile_dump_oracle

import hloscope
from hloscope.analyses.memory.analysis import memory
from hloscope.cli.main import cli

_LOOP = """{name}_cond {{
  {name}_cp = (s32[], f32[1024]) parameter(0)
  {name}_ci = s32[] get-tuple-element({name}_cp), index=0
  {name}_n = s32[] constant(4)
  ROOT {name}_lt = pred[] compare({name}_ci, {name}_n), direction=LT
}}
{name}_body {{
  {name}_bp = (s32[], f32[1024]) parameter(0)
  {name}_i = s32[] get-tuple-element({name}_bp), index=0
  {name}_x = f32[1024] get-tuple-element({name}_bp), index=1
  {name}_one = s32[] constant(1)
  {name}_next_i = s32[] add({name}_i, {name}_one)
  {name}_next_x = f32[1024] negate({name}_x)
  ROOT {name}_out = (s32[], f32[1024]) tuple({name}_next_i, {name}_next_x)
}}
"""
# Two loops over four layers (their scope names them), then a 32 KiB temporary: the program's
# peak is after the loops, where the argument, the backward's result and `big` are live.
TWO_LOOPS_THEN_A_PEAK = "HloModule m, is_scheduled=true\n" + _LOOP.format(name="fwd") + \
    _LOOP.format(name="bwd") + """ENTRY main {
  a = f32[1024] parameter(0)
  x = f32[1024] negate(a)
  zero = s32[] constant(0)
  init = (s32[], f32[1024]) tuple(zero, x)
  forward = (s32[], f32[1024]) while(init), condition=fwd_cond, body=fwd_body, @FORWARD
  h = f32[1024] get-tuple-element(forward), index=1
  back_init = (s32[], f32[1024]) tuple(zero, h)
  backward = (s32[], f32[1024]) while(back_init), condition=bwd_cond, body=bwd_body, @BACKWARD
  g = f32[1024] get-tuple-element(backward), index=1
  zero_f = f32[] constant(0)
  big = f32[8192] broadcast(zero_f), dimensions={}
  ROOT out = (f32[1024], f32[8192]) tuple(g, big)
}"""


def scoped(text: str) -> str:
    """The loops' op_names name the layers, as a scan under `jax.named_scope("layers")`."""
    return text.replace("@FORWARD", 'metadata={op_name="jit(step)/jvp(layers)/while"}').replace(
        "@BACKWARD", 'metadata={op_name="jit(step)/transpose(jvp(layers))/while"}')


def test_the_span_runs_from_the_forward_loop_to_the_backward_and_its_peak_is_below():
    module = hloscope.load(scoped(TWO_LOOPS_THEN_A_PEAK))
    result = memory(module)
    span = result.layer_span
    assert span is not None
    assert (span.first_loop, span.last_loop) == ("forward", "backward")
    assert span.program_peak_bytes == result.peak_bytes >= 4 * (1024 + 1024 + 8192)
    # inside the loops at most the argument and two f32[1024] of the carry (and small tuples)
    assert span.peak_bytes < 4 * 1024 * 4
    assert span.headroom_bytes == result.peak_bytes - span.peak_bytes > 4 * 8192 - 4 * 1024
    # the backward loop holds its carry in and out (4 KiB each) and small tuples, never `big`
    assert 2 * 4 * 1024 <= span.last_loop_peak_bytes <= span.peak_bytes < 4 * 1024 * 3


def test_one_loop_is_no_span():
    text = "HloModule m, is_scheduled=true\n" + _LOOP.format(name="fwd") + """ENTRY main {
  a = f32[1024] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[1024]) tuple(zero, a)
  forward = (s32[], f32[1024]) while(init), condition=fwd_cond, body=fwd_body, @FORWARD
  ROOT h = f32[1024] get-tuple-element(forward), index=1
}"""
    module = hloscope.load(scoped(text))
    assert memory(module).layer_span is None


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> tuple[Path, dict]:
    return compile_dump_oracle("scanned_programs.py", tmp_path_factory.mktemp("scanned"))


@pytest.mark.compile
@pytest.mark.parametrize(("name", "spanned"), [("scanned_full", True), ("scanned_none", True),
                                               ("nested", True), ("unrolled", False),
                                               ("microbatch", False)])
def test_compiled_programs(compiled, name, spanned):
    """A scan's forward and backward loops make the span (a nested scan's outer loops); unrolled
    layers have no loop, and a micro-batch loop around both hides them from the entry."""
    dump, described = compiled
    module = hloscope.load(dump, module=described[name]["module"])
    result = memory(module)
    span = result.layer_span
    assert (span is not None) == spanned
    if span is not None:
        loops = [i.name for i in module.entry.instructions if i.opcode == "while"]
        assert (span.first_loop, span.last_loop) == (loops[0], loops[-1])
        assert 0 <= span.peak_bytes <= result.peak_bytes


def span_line(path: Path, text: str) -> str:
    """`hloscope memory`'s `layer loops:` line for the module `text`, written to `path`."""
    path.write_text(scoped(text))
    shown = CliRunner().invoke(cli, ["memory", str(path), "--wide"])  # the line unwrapped
    assert shown.exit_code == 0, shown.output
    return next(line for line in shown.output.splitlines() if line.startswith("layer loops:"))


def test_memory_says_where_the_peak_is_against_the_loops(tmp_path):
    """`hloscope memory` prints the span and, as JSON, its figures (`layer_span`)."""
    path = tmp_path / "m.hlo"
    line = span_line(path, TWO_LOOPS_THEN_A_PEAK)
    assert "forward .. backward" in line and "the peak is outside them" in line
    shown = json.loads(CliRunner().invoke(cli, ["memory", str(path), "--format", "json"]).output)
    result = memory(hloscope.load(scoped(TWO_LOOPS_THEN_A_PEAK)))
    assert shown["layer_span"] == result.layer_span.to_dict()
    assert shown["layer_span"]["program_peak_bytes"] == shown["peak_bytes"]


# Between the loops the entry makes `held` (32 KiB), which only the root reads after the backward
# loop, and `seed` (4 KiB), which the backward loop consumes: only `held` is deferred.
DEFERRED_PAST_THE_BACKWARD = "HloModule m, is_scheduled=true\n" + _LOOP.format(name="fwd") + \
    _LOOP.format(name="bwd") + """ENTRY main {
  a = f32[1024] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[1024]) tuple(zero, a)
  forward = (s32[], f32[1024]) while(init), condition=fwd_cond, body=fwd_body, @FORWARD
  h = f32[1024] get-tuple-element(forward), index=1
  held = f32[8,1024] broadcast(h), dimensions={1}
  seed = f32[1024] negate(h)
  back_init = (s32[], f32[1024]) tuple(zero, seed)
  backward = (s32[], f32[1024]) while(back_init), condition=bwd_cond, body=bwd_body, @BACKWARD
  g = f32[1024] get-tuple-element(backward), index=1
  ROOT out = (f32[1024], f32[8,1024]) tuple(g, held)
}"""


def test_what_the_entry_holds_through_the_backward_loop_is_deferred():
    span = memory(hloscope.load(scoped(DEFERRED_PAST_THE_BACKWARD))).layer_span
    assert span is not None
    assert span.deferred_bytes == 8 * 1024 * 4
    assert memory(hloscope.load(scoped(TWO_LOOPS_THEN_A_PEAK))).layer_span.deferred_bytes == 0


def test_memory_says_what_is_held_through_the_backward_loop(tmp_path):
    line = span_line(tmp_path / "m.hlo", DEFERRED_PAST_THE_BACKWARD)
    assert "32.0 KiB made between them is held through the last" in line
