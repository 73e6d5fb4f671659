"""Every form of XLA's HLO grammar (xla/hlo/parser/hlo_parser.cc) that the one-line fast path does
not take is parsed as XLA's own parser (jaxlib 0.10.2) parses it: the same computations, the same
instructions in the same order, with the same opcodes and shapes. The cases are written from the
grammar; each is compared with jaxlib._hlo, never with hloscope's own earlier output."""
from __future__ import annotations

import pytest
from xla_oracle import compare_with_xla, xla_available, xla_parse

import hloscope
from hloscope.errors import ParseError

SCALAR_ADD = ("add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
              "  ROOT s = f32[] add(a, b)\n}\n")
LESS = ("lt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT c = pred[] compare(a, b), direction=LT\n}\n")

FORMS: dict[str, str] = {
    "shapeless_elementwise": """HloModule m
ENTRY e {
  p = f32[4,8] parameter(0)
  q = f32[4,8] parameter(1)
  n = negate(p)
  a = add(n, q)
  x = exponential(a)
  c = compare(x, q), direction=GT
  s = select(c, x, q)
  k = clamp(p, s, q)
  f = is-finite(k)
  z = complex(p, q)
  r = real(z)
  i = imag(z)
  ROOT t = tuple(f, r, i, k)
}
""",
    "shapeless_structural": """HloModule m
""" + SCALAR_ADD + """
ENTRY e {
  p = (f32[4,8], s32[]) parameter(0)
  g = get-tuple-element(p), index=0
  b = broadcast(g), dimensions={2,3}
  t = transpose(g), dimensions={1,0}
  c = concatenate(g, g), dimensions={0}
  d = dot(g, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = f32[] constant(0)
  r = reduce(c, z), dimensions={1}, to_apply=add
  pd = pad(g, z), padding=1_2x0_0_1
  rv = reverse(g), dimensions={0}
  cp = copy(rv)
  m = map(g, g), dimensions={0,1}, to_apply=add
  tk = after-all()
  id = partition-id()
  sz = get-dimension-size(g), dimensions={1}
  ROOT o = tuple(b, d, r, pd, cp, m, tk, id, sz)
}
""",
    "shapeless_reduce_window": """HloModule m
""" + SCALAR_ADD + """
ENTRY e {
  p = f32[8,14,14,3] parameter(0)
  z = f32[] constant(0)
  a = reduce-window(p, z), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x0_1x0_0}, to_apply=add
  b = reduce-window(p, z), window={size=1x2x2x1 lhs_dilate=1x2x2x1 rhs_dilate=1x3x2x1}, to_apply=add
  c = reduce-window(p, z), window={size=1x20x1x1}, to_apply=add
  d = reduce-window(p, z), window={size=2x2x1x3 stride=2x2x1x1 pad=0_1x0_0x0_0x1_1}, to_apply=add
  ROOT t = tuple(a, b, c, d)
}
""",
    # XLA's lexer skips blanks and line breaks between tokens: a header's `{` may stand on the
    # next line, an operand's shape may touch its name, blanks may part a layout from its dims
    # (XLA's copy_insertion_test, layout_assignment_test and collective_pipeliner_test).
    "header_brace_on_next_line": """HloModule m

on_true
 {
  v1 = f32[2] parameter(0)
  ROOT v2 = f32[2] add(v1, v1)
}

ENTRY main
{
  p = f32[4,2]{1,0} parameter(0)
  q = f32[4,2] {0,1} negate(p)
  u = (f32[4,2] {1,0}, f32[4,2]) tuple(q, p)
  r = f32[8]{0} reshape(f32[4,2]{1,0}%p)
  g = f32[4,2] get-tuple-element((f32[4,2], f32[4,2])%u), index=1
  s = f32[2] slice(r), slice={[0:2]}
  ROOT c = f32[2] call(f32[2]%s), to_apply=on_true
}
""",
    "shapeless_calls_and_sort": """HloModule m
""" + SCALAR_ADD + LESS + """
body {
  bp = f32[4] parameter(0)
  ROOT bt = tuple(negate(bp))
}
""",
    "buffer_type": """HloModule m
ENTRY e {
  p = b(f32[4]{0}) parameter(0)
  q = f32[2] parameter(1)
  ROOT t = (b(f32[4]), f32[2]) tuple(p, q)
}
""",
    "old_header": """HloModule m:
ENTRY e {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}
""",
    "nested_operands": """HloModule m
ENTRY e {
  ROOT a = f32[4] add(f32[4] parameter(0), f32[4] multiply(f32[4] parameter(1),
      maximum(f32[4] parameter(2), f32[4] parameter(3))))
}
""",
    "computation_on_one_line": "HloModule m\n"
    "add { a = f32[] parameter(0) b = f32[] parameter(1) ROOT s = f32[] add(a, b) }\n"
    "ENTRY e { p = f32[8] parameter(0) z = f32[] constant(0) "
    "ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=add }\n",
    "header_string_spanning_lines": """HloModule m, frontend_attributes={note="first
second"}
ENTRY e {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}
""",
    "header_after_trailing_comma": """HloModule m,
  is_scheduled=true,
  entry_computation_layout={(f32[4]{0})->f32[4]{0}}
ENTRY e {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}
""",
    "line_break_after_equals": """HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  ROOT n =
      f32[4] negate(p)
}
""",
    "inline_body_after_calls": """HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  c = f32[4] call(p), to_apply=
  {
    q = f32[4] parameter(0)
    ROOT n = f32[4] negate(q)
  }
  ROOT c2 = f32[4] call(c), to_apply={ q = f32[4] parameter(0)
    ROOT x = f32[4] exponential(q) }
}
""",
    "root_after_custom_call": """HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  c = f32[4] custom-call(p), custom_call_target="my_target",
      backend_config="{\\"k\\": 1}"
  ROOT t = tuple(c, p)
}
""",
    "async_shorthand": """HloModule m
""" + SCALAR_ADD + """
fused {
  fp = f32[4,8] parameter(0)
  ROOT fe = f32[4,8] exponential(fp)
}
callee {
  cp = f32[4,8] parameter(0)
  ROOT cn = f32[4,8] negate(cp)
}
ENTRY e {
  p = f32[4,8] parameter(0)
  w = f32[8,16] parameter(1)
  st1 = ((f32[4,8]), f32[4,8], s32[]) custom-call-start(p), custom_call_target="foo"
  dn1 = f32[4,8] custom-call-done(st1)
  st2 = ((f32[4,8], f32[8,16]), f32[4,16], s32[]) dot-start(dn1, w), lhs_contracting_dims={1},
      rhs_contracting_dims={0}
  dn2 = f32[4,16] dot-done(st2)
  st3 = ((f32[4,8], f32[4,8]), f32[4,8], s32[]) add-start(p, dn1)
  up3 = ((f32[4,8], f32[4,8]), f32[4,8], s32[]) add-update(st3)
  dn3 = f32[4,8] add-done(up3)
  st4 = ((f32[4,8]), f32[4,8], s32[]) fusion-start(dn3), kind=kLoop, calls=fused
  dn4 = f32[4,8] fusion-done(st4)
  st5 = ((f32[4,8]), f32[4,8], s32[]) call-start(dn4), to_apply=callee
  dn5 = f32[4,8] call-done(st5)
  st6 = ((f32[4,8]), f32[1,8], s32[]) reduce-scatter-start(dn5), replica_groups={},
      dimensions={0}, to_apply=add
  dn6 = f32[1,8] reduce-scatter-done(st6)
  ROOT t = (f32[4,16], f32[1,8]) tuple(dn2, dn6)
}
""",
}
# XLA's pattern_matcher_test writes a whole module on one line.
FORMS["module_on_one_line"] = "HloModule m ENTRY e { p = f16[2] parameter(0) ROOT n = negate(p) }\n"
FORMS["entry_on_the_module_line"] = ("HloModule m ENTRY e {\n  p = f16[2] parameter(0)\n"
                                     "  ROOT n = negate(p)\n}\n")
# XLA's sharding_remover_test breaks an ENTRY header before its signature.
FORMS["signature_on_the_next_line"] = ("HloModule m\n\nENTRY %e\n  (p: f32[2]) -> f32[2] {\n"
                                       "  %p = f32[2] parameter(0)\n"
                                       "  ROOT %n = f32[2] negate(%p)\n}\n")
FORMS["shapeless_calls_and_sort"] += """ENTRY e {
  p = f32[4] parameter(0)
  i = s32[] constant(0)
  c = call(p, p), to_apply=add2
  s = sort(p), dimensions={0}, to_apply=lt
  tp = tuple(i, p)
  ROOT t = tuple(c, s, tp)
}
""".replace("to_apply=add2", "to_apply=vadd")
FORMS["shapeless_calls_and_sort"] = FORMS["shapeless_calls_and_sort"].replace(
    "body {", "vadd {\n  x = f32[4] parameter(0)\n  y = f32[4] parameter(1)\n"
    "  ROOT z = f32[4] add(x, y)\n}\nbody {")


@pytest.fixture(autouse=True)
def _need_xla() -> None:
    if not xla_available():
        pytest.skip("jaxlib is not importable: XLA's parser is the oracle here")


@pytest.mark.parametrize("name", sorted(FORMS))
def test_form_parses_as_xla_parses_it(name: str) -> None:
    assert compare_with_xla(FORMS[name], name) == []


def test_async_shorthand_calls_a_wrapped_computation() -> None:
    module = hloscope.load(FORMS["async_shorthand"])
    start = next(i for i in module.entry if i.name == "st2")
    assert start.opcode == "async-start"
    wrapped = module.computations[start.required_called_computation("calls")]
    assert [i.opcode for i in wrapped] == ["parameter", "parameter", "dot"]
    assert wrapped.root.rhs_contracting_dims == (0,)


def test_root_after_custom_call_is_its_own_instruction() -> None:
    module = hloscope.load(FORMS["root_after_custom_call"])
    assert module.entry.root.name == "t"
    assert module.entry.instructions[1].custom_call_target == "my_target"


@pytest.mark.parametrize("opcode, shape_line", [
    ("convert", "c = convert(p)"),
    ("slice", "c = slice(p), slice={[0:2]}"),
    ("reshape", "c = reshape(p)"),
    ("all-reduce", "c = all-reduce(p), to_apply=add"),
])
def test_shape_required_where_xla_requires_it(opcode: str, shape_line: str) -> None:
    """XLA refuses these without a result shape ("cannot infer shape for opcode"); so does
    hloscope, at the line of the instruction."""
    from jaxlib import _hlo

    text = f"HloModule m\n{SCALAR_ADD}ENTRY e {{\n  p = f32[4] parameter(0)\n  {shape_line}\n}}\n"
    with pytest.raises(Exception, match="cannot infer shape"):
        _hlo.hlo_module_from_text(text)
    with pytest.raises(ParseError, match=f"cannot infer shape for opcode: {opcode}") as caught:
        hloscope.load(text)
    assert caught.value.location.line == 9
    assert caught.value.exit_code == 4


# XLA's async shorthand `X-start` takes `async_execution_thread` beside X's own attributes (the
# parser registers it before it parses X's), for any X: forms from XLA's parser and instruction
# tests (call-start with an inline body, custom-call-start, reduce-scatter-start).
THREADED: dict[str, tuple[str, str]] = {
    "call": ("""HloModule main, is_scheduled=true

ENTRY main {
  arg.0 = s32[] parameter(0)
  call-start.0 = ((s32[]), s32[], s32[]) call-start(arg.0), to_apply={
    arg.0 = s32[] parameter(0)
    ROOT abs.0 = abs(arg.0)
  }, async_execution_thread="thread"
  ROOT call-done.0 = s32[] call-done(call-start.0)
}
""", "call-start.0"),
    "custom-call": ("""HloModule m

ENTRY %Entry (p0: f32[10]) -> f32[20] {
  %p0 = f32[10]{0} parameter(0)
  %async-start = ((f32[10]{0}), f32[20]{0}, s32[]) custom-call-start(f32[10]{0} %p0), async_execution_thread="parallel_thread", custom_call_target="foo"
  %async-update = ((f32[10]{0}), f32[20]{0}, s32[]) custom-call-update(((f32[10]{0}), f32[20]{0}, s32[]) %async-start), async_execution_thread="parallel_thread"
  ROOT %async-done = f32[20]{0} custom-call-done(((f32[10]{0}), f32[20]{0}, s32[]) %async-update)
}
""", "async-start"),  # noqa: E501
    "reduce-scatter": ("""HloModule m

%add (p0: f32[], p1: f32[]) -> f32[] {
  %p0 = f32[] parameter(0)
  %p1 = f32[] parameter(1)
  ROOT %add = f32[] add(%p0, %p1)
}, execution_thread="parallel_thread"

ENTRY %Entry (pentry: f32[20]) -> f32[10] {
  %pentry = f32[20]{0} parameter(0)
  %reduce-scatter-start = ((f32[20]{0}), f32[10]{0}) reduce-scatter-start(%pentry), async_execution_thread="parallel_thread", replica_groups={}, dimensions={0}, to_apply=%add
  %reduce-scatter-update = ((f32[20]{0}), f32[10]{0}) reduce-scatter-update(%reduce-scatter-start)
  ROOT %reduce-scatter-done = f32[10]{0} reduce-scatter-done(%reduce-scatter-update)
}
""", "reduce-scatter-start"),  # noqa: E501
}


@pytest.mark.parametrize("wrapped", sorted(THREADED))
def test_async_execution_thread_on_the_shorthand(wrapped: str) -> None:
    from jaxlib import _hlo

    text, start_name = THREADED[wrapped]
    _hlo.hlo_module_from_text(text)  # XLA accepts it
    assert compare_with_xla(text, wrapped) == []
    module = hloscope.load(text)  # with the checks XLA's parser makes
    start = next(i for i in module.entry if i.name == start_name)
    thread = start.raw_attribute("async_execution_thread")
    assert start.opcode == "async-start" and thread is not None
    computation = module.computations[start.required_called_computation("calls")]
    assert computation.root.opcode == wrapped
    assert computation.execution_thread == thread.strip('"')
    assert "async_execution_thread" not in computation.root.attribute_names


def test_async_execution_thread_refused_on_a_plain_call() -> None:
    """Only the async forms take it: XLA refuses it on `call` itself, and so does hloscope."""
    from jaxlib import _hlo

    text = THREADED["call"][0].replace(
        "call-start.0 = ((s32[]), s32[], s32[]) call-start(arg.0)",
        "ROOT call.0 = s32[] call(arg.0)").replace(
        "  ROOT call-done.0 = s32[] call-done(call-start.0)\n", "")
    with pytest.raises(Exception, match="async_execution_thread"):
        _hlo.hlo_module_from_text(text)
    with pytest.raises(ParseError, match="unexpected attribute 'async_execution_thread' on call"):
        hloscope.load(text)


def test_variadic_reduce_window_needs_its_shape() -> None:
    """XLA's parser infers a one-input reduce-window only ("Reduction function must take 2
    parameters"); so does hloscope."""
    text = ("HloModule m\n\nadd2 {\n  a = f32[] parameter(0)\n  b = s32[] parameter(1)\n"
            "  c = f32[] parameter(2)\n  d = s32[] parameter(3)\n  s = f32[] add(a, c)\n"
            "  t = s32[] add(b, d)\n  ROOT r = (f32[], s32[]) tuple(s, t)\n}\n\nENTRY e {\n"
            "  p = f32[4,4] parameter(0)\n  i = s32[4,4] parameter(1)\n  z = f32[] constant(0)\n"
            "  k = s32[] constant(0)\n"
            "  ROOT w = reduce-window(p, i, z, k), window={size=2x2}, to_apply=add2\n}\n")
    with pytest.raises(Exception, match="failed to infer shape for opcode: reduce-window"):
        xla_parse(text)
    with pytest.raises(ParseError, match="failed to infer shape for opcode: reduce-window"):
        hloscope.load(text)


def test_declared_tuple_operand_shape_must_match() -> None:
    """A tuple shape written against its operand's name (`(f32[4,2], f32[4,2])%u`, XLA's
    while_loop_all_reduce_code_motion_test) is read as the shape, then checked: XLA's parser
    refuses a different one at the same place."""
    text = ("HloModule m\nENTRY main {\n  p = f32[4,2]{1,0} parameter(0)\n"
            "  u = (f32[4,2], f32[4,2]) tuple(p, p)\n"
            "  ROOT g = f32[4,2] get-tuple-element((f32[4,2], f32[4,3])%u), index=1\n}\n")
    with pytest.raises(Exception, match="was parsing 5:39"):
        xla_parse(text)
    with pytest.raises(ParseError, match=r"5:39: error: the declared operand shape"):
        hloscope.load(text)
