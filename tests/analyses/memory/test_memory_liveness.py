"""hloscope's liveness on hand-written modules, against the expectations of XLA's own tests.

The cases and their expected live ranges are those of xla/hlo/utils/hlo_live_range_test.cc
(Multiply, MultiplyAdd, LiveOutBuffers, InstructionScheduledAfterRoot, AliasedParameter, While,
ToStringComputationWithTuple, Call, AsyncCall); the rest check in-place updates, memory
spaces, tile padding and the timeline on modules small enough to count by hand.
"""
from __future__ import annotations

import pytest

import hloscope
from hloscope.analyses.memory.analysis import memory
from hloscope.analyses.memory.liveness import analyze_liveness
from hloscope.analyses.memory.liveness.peak import live_at, live_bytes, xla_moment
from hloscope.errors import NotScheduledError


def ranges(text: str) -> dict[str, tuple[int, int]]:
    liveness = analyze_liveness(hloscope.load(text))
    return {v.name: liveness.ranges[v.id] for v in liveness.live_values()}


def test_multiply_add_and_read_only_parameters():
    text = """HloModule m, is_scheduled=true
ENTRY main {
  paramA = f32[4] parameter(0)
  paramX = f32[4] parameter(1)
  mul = f32[4] multiply(paramA, paramX)
  paramY = f32[4] parameter(2)
  ROOT add = f32[4] add(mul, paramY)
}"""
    assert ranges(text) == {"paramA{}": (0, 5), "paramX{}": (0, 5), "paramY{}": (0, 5),
                            "mul{}": (2, 4), "add{}": (4, 5)}


def test_live_out_buffers_and_an_instruction_after_the_root():
    text = """HloModule m, is_scheduled=true
ENTRY main {
  paramA = f32[4] parameter(0)
  paramX = f32[4] parameter(1)
  mul = f32[4] multiply(paramA, paramX)
  paramY = f32[4] parameter(2)
  add = f32[4] add(mul, paramY)
  ROOT tuple = (f32[4], f32[4]) tuple(mul, add)
  add2 = f32[4] add(mul, paramY)
}"""
    assert ranges(text) == {"paramA{}": (0, 7), "paramX{}": (0, 7), "paramY{}": (0, 7),
                            "mul{}": (2, 7), "add{}": (4, 7), "tuple{}": (5, 7),
                            "add2{}": (6, 6)}


def test_an_aliased_parameter_ends_at_its_last_use():
    text = """HloModule m, is_scheduled=true, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY main {
  paramA = f32[4] parameter(0)
  paramX = f32[4] parameter(1)
  mul = f32[4] multiply(paramA, paramX)
  paramY = f32[4] parameter(2)
  ROOT add = f32[4] add(mul, paramY)
}"""
    found = ranges(text)
    assert found["paramA{}"] == (0, 2)
    assert found["paramX{}"] == found["paramY{}"] == (0, 5)


WHILE = """HloModule m, is_scheduled=true
cond {
  cond_param = (f32[2,3], f32[]) parameter(0)
  cond_iter = f32[] get-tuple-element(cond_param), index=1
  cond_limit = f32[] constant(50)
  ROOT cond_lt = pred[] compare(cond_iter, cond_limit), direction=LT
}
body {
  body_param = (f32[2,3], f32[]) parameter(0)
  body_iter = f32[] get-tuple-element(body_param), index=1
  body_data = f32[2,3] get-tuple-element(body_param), index=0
  body_iter_increment = f32[] constant(1)
  body_iter_next = f32[] add(body_iter, body_iter_increment)
  body_data_increment = f32[2,3] constant({{1,2,3},{4,5,6}})
  body_data_mul = f32[2,3] multiply(body_data, body_data)
  body_data_add = f32[2,3] add(body_data, body_data_increment)
  body_data_next = f32[2,3] add(body_data_add, body_data_mul)
  ROOT body_out = (f32[2,3], f32[]) tuple(body_data_next, body_iter_next)
}
ENTRY main {
  iter = f32[] parameter(1)
  data = f32[2,3] parameter(0)
  tuple = (f32[2,3], f32[]) tuple(data, iter)
  ROOT while = (f32[2,3], f32[]) while(tuple), condition=cond, body=body
}"""


def test_while_values_sharing_a_buffer_leave_no_gaps():
    found = ranges(WHILE)
    # the loop counter's buffer passes from the entry to the condition to the body, unbroken
    assert found["iter{}"][1] == found["cond_param{1}"][0]
    assert found["cond_param{1}"][1] == found["body_param{1}"][0]
    assert found["body_param{1}"][1] == found["body_iter_next{}"][0]


CARRY = """HloModule m, is_scheduled=true
cond {
  cond_param = (s32[], f32[1024]) parameter(0)
  cond_i = s32[] get-tuple-element(cond_param), index=0
  cond_n = s32[] constant(4)
  ROOT cond_lt = pred[] compare(cond_i, cond_n), direction=LT
}
body {
  body_param = (s32[], f32[1024]) parameter(0)
  body_i = s32[] get-tuple-element(body_param), index=0
  body_x = f32[1024] get-tuple-element(body_param), index=1
  body_one = s32[] constant(1)
  body_next_i = s32[] add(body_i, body_one)
  body_next_x = f32[1024] negate(body_x)
  ROOT body_out = (s32[], f32[1024]) tuple(body_next_i, body_next_x)
}
ENTRY main {
  a = f32[1024] parameter(0)
  x = f32[1024] negate(a)
  zero = s32[] constant(0)
  init = (s32[], f32[1024]) tuple(zero, x)
  loop = (s32[], f32[1024]) while(init), condition=cond, body=body
  ROOT result = f32[1024] get-tuple-element(loop), index=1
}"""


def test_a_loop_carry_counts_once_where_its_values_meet():
    """Two f32[1024] arrays exist at any moment: the argument and the loop's carried array,
    whose values (condition parameter, body parameter, the negated copy, the loop's result)
    share one buffer and touch at their ends. Summed value by value, as XLA's live-range dump
    does, the carry counts twice where they meet."""
    liveness = analyze_liveness(hloscope.load(CARRY))
    arrays = lambda value: value.shape.element_count == 1024  # noqa: E731
    assert max(live_bytes(liveness, keep=arrays)) == 2 * 4096
    assert max(live_bytes(liveness, keep=arrays, per_buffer=False)) == 3 * 4096
    boundary = liveness.ranges[_value(liveness, "body_param", (1,)).id][0]
    assert {v.name for v in live_at(liveness, boundary, keep=arrays)} == {"a{}", "body_param{1}"}


def _value(liveness, instruction: str, index: tuple[int, ...]):
    return next(v for v in liveness.values
                if v.instruction.name == instruction and v.index == index)


def test_a_tuple_counts_its_pointer_table_and_xla_moment_sizes_by_instruction():
    text = """HloModule m, is_scheduled=true
ENTRY main {
  paramA = f32[4] parameter(0)
  constant = (f32[], f32[4]) constant((1, {2, 3, 4, 5}))
  get-tuple-element = f32[4] get-tuple-element(constant), index=1
  ROOT add = f32[4] add(paramA, get-tuple-element)
}"""
    assert ranges(text) == {"paramA{}": (0, 4), "constant{}": (1, 2), "constant{0}": (1, 1),
                            "constant{1}": (1, 3), "add{}": (3, 4)}
    liveness = analyze_liveness(hloscope.load(text))
    moment = xla_moment(liveness)
    assert moment == 1
    assert {v.name: v.bytes for v in live_at(liveness, moment, per_buffer=False)} == {
        "constant{}": 16, "constant{1}": 16, "paramA{}": 16, "constant{0}": 4}


def test_a_call_runs_its_computation_first_and_passes_operands_through():
    text = """HloModule m, is_scheduled=true
called_computation {
  param_0 = f32[4096] parameter(0)
  ROOT negate_0 = f32[4096] negate(param_0)
}
ENTRY main {
  a = f32[4096] parameter(0)
  b = f32[4096] negate(a)
  c = f32[4096] call(b), to_apply=called_computation
  d = f32[4096] negate(c)
  ROOT e = f32[4096] add(c, d)
}"""
    assert ranges(text) == {"a{}": (0, 7), "b{}": (1, 3), "negate_0{}": (3, 6),
                            "d{}": (5, 6), "e{}": (6, 7)}


def test_values_of_an_async_computation_live_until_its_done():
    text = """HloModule m, is_scheduled=true
called_computation {
  param_0 = f32[4096] parameter(0)
  param_1 = f32[4096] parameter(1)
  negate_2 = f32[4096] negate(param_0)
  negate_3 = f32[4096] negate(param_1)
  ROOT result.1 = f32[4096] add(negate_2, negate_3)
}
async_wrapped {
  async_param = f32[4096] parameter(0)
  async_param.1 = f32[4096] parameter(1)
  ROOT call = f32[4096] call(async_param, async_param.1), to_apply=called_computation
}
ENTRY main {
  a = f32[4096] parameter(0)
  b = f32[4096] parameter(1)
  negate_0 = f32[4096] negate(a)
  negate_1 = f32[4096] negate(b)
  async-start = ((f32[4096], f32[4096]), f32[4096], u32[]) async-start(negate_0,
    negate_1), calls=async_wrapped
  add_0 = f32[4096] add(negate_0, negate_1)
  async-done = f32[4096] async-done(async-start)
  ROOT add_1 = f32[4096] add(add_0, async-done)
}"""
    found = ranges(text)
    assert found["a{}"] == found["b{}"] == (0, 16)
    assert found["add_0{}"] == (13, 15)
    assert found["add_1{}"] == (15, 16)
    assert found["negate_0{}"] == (2, 14)
    assert found["negate_1{}"] == (3, 14)
    assert found["negate_2{}"][1] >= 14  # made in the async context: lives until the done


def test_an_in_place_update_shares_its_operands_buffer():
    text = """HloModule m, is_scheduled=true
ENTRY main {
  p = f32[1024] parameter(0)
  big = f32[1024] negate(p)
  update = f32[16] parameter(1)
  index = s32[] parameter(2)
  dus = f32[1024] dynamic-update-slice(big, update, index)
  ROOT out = f32[1024] exponential(dus)
}"""
    liveness = analyze_liveness(hloscope.load(text))
    by_name = {v.name: v for v in liveness.live_values()}
    big, dus = by_name["big{}"], by_name["dus{}"]
    assert liveness.buffers.find(big.id) == liveness.buffers.find(dus.id)
    assert liveness.ranges[big.id][1] == liveness.ranges[dus.id][0]


def test_memory_spaces_on_tpu_and_tile_padding():
    text = """HloModule m, is_scheduled=true
ENTRY main {
  p = f32[3,100]{1,0:T(8,128)} parameter(0)
  v = f32[3,100]{1,0:T(8,128)S(1)} negate(p)
  ROOT h = f32[3,100]{1,0:T(8,128)} exponential(v)
}"""
    result = memory(hloscope.load(text), backend="tpu")
    spaces = {s.memory_space: s for s in result.spaces}
    assert spaces[1].location == "on-chip" and spaces[1].peak_bytes == 1200
    assert spaces[1].padded_peak_bytes == 8 * 128 * 4
    assert result.peak_bytes == 2400  # p and h live in HBM; v (VMEM) is not device memory
    assert result.padded_peak_bytes == 2 * 8 * 128 * 4
    assert result.all_spaces_peak_bytes == 3600  # while h is made, v is read: all three


def test_a_loop_is_one_timeline_step_with_its_inner_peak():
    result = memory(hloscope.load(WHILE))
    steps = {step.instruction: step for step in result.timeline}
    assert [s.instruction for s in result.timeline] == ["iter", "data", "tuple", "while"]
    loop = steps["while"]
    assert loop.inner_peak_bytes == result.peak_bytes > loop.live_bytes
    assert result.peak_instruction in {"body_data_add", "body_data_next", "body_data_mul"}


def test_an_unscheduled_module_is_refused():
    text = """HloModule m
ENTRY main {
  ROOT p = f32[4] parameter(0)
}"""
    with pytest.raises(NotScheduledError, match="after-optimizations"):
        memory(hloscope.load(text))
    assert NotScheduledError.exit_code == 4


def test_the_peak_column_for_other_commands():
    from hloscope.analyses.memory.analysis import live_peak_bytes

    assert live_peak_bytes(hloscope.load(WHILE)) == (memory(hloscope.load(WHILE)).peak_bytes, "")
    unscheduled = hloscope.load("HloModule m\nENTRY main {\n  ROOT p = f32[4] parameter(0)\n}")
    peak, reason = live_peak_bytes(unscheduled)
    assert peak is None and "not scheduled" in reason
