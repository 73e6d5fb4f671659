"""Hand-written pairs of modules: one XLA's parser accepts, and the same with one semantic fault.

Each case names the fault, the valid body, the invalid body and the line XLA reports it at (the
line of the faulty instruction, or 1 for the module header). `xla_refuses` is False where XLA
0.10.2's parser crashes on the invalid form (SIGSEGV) instead of refusing it.
"""
from __future__ import annotations

from dataclasses import dataclass

_TEMPLATE = """HloModule m{header}

%c (a: f32[]) -> f32[] {{
  ROOT %a = f32[] parameter(0)
}}

%c2 (a: f32[]) -> f32[] {{
  ROOT %a = f32[] parameter(0)
}}

%add (x: f32[], y: f32[]) -> f32[] {{
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}}

ENTRY %e (p: f32[4]) -> f32[4] {{
  %p = f32[4] parameter(0)
{body}
}}
"""
BODY_LINE = 19  # the first line of {body}


@dataclass(frozen=True)
class SemanticCase:
    fault: str
    valid: str
    invalid: str
    line: int
    message: str
    xla_refuses: bool = True
    lenient_skips: bool = True  # False: a check the analyses rely on, made under --lenient too


def module(body: str, header: str = "") -> str:
    return _TEMPLATE.format(header=header, body=body)


def _case(fault: str, valid: str, invalid: str, line_in_body: int, message: str,
          header: tuple[str, str] = ("", ""), xla_refuses: bool = True,
          lenient_skips: bool = True) -> SemanticCase:
    line = 1 if header[1] else BODY_LINE + line_in_body
    return SemanticCase(fault, module(valid, header[0]), module(invalid, header[1]), line,
                        message, xla_refuses, lenient_skips)


_NEG = "  ROOT %r = f32[4] negate(%p)"
CASES = [
    _case("undefined control-predecessor",
          "  %q = f32[] constant(1)\n  ROOT %r = f32[4] negate(%p), control-predecessors={%q}",
          "  %q = f32[] constant(1)\n  ROOT %r = f32[4] negate(%p), control-predecessors={%z}",
          1, "'z' is not defined"),
    _case("control-predecessor defined below",
          "  %q = f32[] constant(1)\n  ROOT %r = f32[4] negate(%p), control-predecessors={%q}",
          "  ROOT %r = f32[4] negate(%p), control-predecessors={%r}", 0, "'r' is not defined"),
    _case("duplicate instruction name",
          "  %q = f32[4] negate(%p)\n  ROOT %r = f32[4] negate(%q)",
          "  %q = f32[4] negate(%p)\n  %q = f32[4] negate(%p)\n  ROOT %r = f32[4] negate(%q)",
          1, "defined twice"),
    _case("duplicate parameter number",
          "  %p1 = f32[] parameter(1)\n" + _NEG, "  %p1 = f32[] parameter(0)\n" + _NEG, 0,
          "duplicate parameter number 0"),
    _case("parameter number past the parameter count",  # XLA aborts (CHECK) on it
          "  %q = f32[4] parameter(1)\n  ROOT %r = f32[4] add(%p, %q)",
          "  %q = f32[4] parameter(2)\n  ROOT %r = f32[4] add(%p, %q)", 0,
          "invalid parameter number 2", xla_refuses=False),
    # Verifier-level (XLA's parser lets them through, its verifier refuses them): signatures,
    # which the analyses rely on, so that --lenient makes them too.
    _case("fusion shape is not its computation's root's",
          "  %z = f32[] constant(1)\n  %f = f32[] fusion(%z), kind=kLoop, calls=%c\n" + _NEG,
          "  %z = f32[] constant(1)\n  %f = s32[] fusion(%z), kind=kLoop, calls=%c\n" + _NEG, 1,
          "is not that of c's root", xla_refuses=False,
          lenient_skips=False),
    _case("fusion operands fewer than its computation's parameters",
          "  %z = f32[] constant(1)\n  %f = f32[] fusion(%z, %z), kind=kLoop, calls=%add\n" + _NEG,
          "  %z = f32[] constant(1)\n  %f = f32[] fusion(%z), kind=kLoop, calls=%add\n" + _NEG,
          1, "passes 1 operand(s) to add, which takes 2 parameter(s)", xla_refuses=False,
          lenient_skips=False),
    _case("call operand of another shape",
          "  %z = f32[] constant(1)\n  %k = f32[] call(%z), to_apply=%c\n" + _NEG,
          "  %z = f32[] constant(1)\n  %k = f32[] call(%p), to_apply=%c\n" + _NEG, 1,
          "operand 0 has shape f32[4]", xla_refuses=False,
          lenient_skips=False),
    _case("conditional with a branch operand missing",
          "  %i = s32[] constant(0)\n  %z = f32[] constant(1)\n  %k = f32[] conditional(%i, %z, "
          "%z), branch_computations={%c, %c2}\n" + _NEG,
          "  %i = s32[] constant(0)\n  %z = f32[] constant(1)\n  %k = f32[] conditional(%i, %z), "
          "branch_computations={%c, %c2}\n" + _NEG, 2,
          "has 2 branch(es) and 1 branch operand(s)", xla_refuses=False,
          lenient_skips=False),
    _case("operand defined below its use",
          "  %a = f32[4] negate(%p)\n  %b = f32[4] negate(%a)\n  ROOT %r = f32[4] negate(%b)",
          "  %a = f32[4] negate(%b)\n  %b = f32[4] negate(%p)\n  ROOT %r = f32[4] negate(%a)",
          0, "'b' is not defined"),
    _case("undefined operand", _NEG, "  ROOT %r = f32[4] negate(%nope)", 0,
          "'nope' is not defined"),
    _case("declared operand shape disagrees", "  ROOT %r = f32[4] negate(f32[4]{0} %p)",
          "  ROOT %r = f32[4] negate(f32[5] %p)", 0, "declared operand shape"),
    _case("declared operand type disagrees", "  ROOT %r = f32[4] negate(f32[4] %p)",
          "  ROOT %r = f32[4] negate(s32[4] %p)", 0, "declared operand shape"),
    _case("binary op with one operand", "  ROOT %r = f32[4] add(%p, %p)",
          "  ROOT %r = f32[4] add(%p)", 0, "expects 2 operands, but has 1"),
    _case("unary op without operands", _NEG, "  ROOT %r = f32[4] negate()", 0,
          "expects 1 operands, but has 0"),
    _case("select with two operands",
          "  %b = pred[4] parameter(1)\n  ROOT %r = f32[4] select(%b, %p, %p)",
          "  %b = pred[4] parameter(1)\n  ROOT %r = f32[4] select(%b, %p)", 1, "expects 3"),
    _case("conditional without operands",
          "  %i = s32[] constant(0)\n  %q = f32[] constant(1)\n"
          "  %k = f32[] conditional(%i, %q), branch_computations={%c}\n" + _NEG,
          "  %k = f32[] conditional(), branch_computations={%c}\n" + _NEG, 0,
          "expects at least 1 operands", xla_refuses=False, lenient_skips=False),
    _case("integer literal out of range", "  %t = s8[] constant(127)\n" + _NEG,
          "  %t = s8[] constant(300)\n" + _NEG, 0, "out of range"),
    _case("unsigned literal negative", "  %t = u8[] constant(0)\n" + _NEG,
          "  %t = u8[] constant(-1)\n" + _NEG, 0, "out of range"),
    _case("f16 literal rounds to infinity", "  %t = f16[] constant(65519)\n" + _NEG,
          "  %t = f16[] constant(65520)\n" + _NEG, 0, "out of range"),
    _case("s4 literal out of range", "  %t = s4[] constant(-8)\n" + _NEG,
          "  %t = s4[] constant(8)\n" + _NEG, 0, "out of range"),
    _case("float literal in an integer type", "  %t = s32[] constant(1)\n" + _NEG,
          "  %t = s32[] constant(1.5)\n" + _NEG, 0, "expects an integer"),
    _case("literal not nested", "  %t = f32[2,2] constant({ {1,2}, {3,4} })\n" + _NEG,
          "  %t = f32[2,2] constant({1,2,3,4})\n" + _NEG, 0, "nested array in rank 2"),
    _case("ragged literal", "  %t = f32[2,2] constant({ {1,2}, {3,4} })\n" + _NEG,
          "  %t = f32[2,2] constant({ {1,2}, {3} })\n" + _NEG, 0, "expects 2 elements"),
    _case("short literal", "  %t = f32[3] constant({1,2,3})\n" + _NEG,
          "  %t = f32[3] constant({1,2})\n" + _NEG, 0, "expects 3 elements"),
    _case("braced scalar literal", "  %t = f32[] constant(1)\n" + _NEG,
          "  %t = f32[] constant({1})\n" + _NEG, 0, "rank 0"),
    _case("word in a literal", "  %t = f32[2] constant({1,inf})\n" + _NEG,
          "  %t = f32[2] constant({1,x})\n" + _NEG, 0, "expects a number"),
    _case("input_output_alias malformed", _NEG, _NEG, 0, "expected format",
          header=(", input_output_alias={ {}: (0, {}, may-alias) }",
                  ", input_output_alias={ {}: 0 x }")),
    _case("input_output_alias kind", _NEG, _NEG, 0, "aliasing kind",
          header=(", input_output_alias={ {}: (0, {}, must-alias) }",
                  ", input_output_alias={ {}: (0, {}, maybe) }")),
    _case("input_output_alias output index", _NEG, _NEG, 0, "output index",
          header=(", input_output_alias={ {}: (0, {}) }",
                  ", input_output_alias={ {2}: (0, {}) }")),
    _case("buffer_donor malformed", _NEG, _NEG, 0, "expected format",
          header=(", buffer_donor={ (0, {}) }", ", buffer_donor={ 0 }")),
    _case("attribute not allowed on the opcode", "  %t = f32[] constant(0)\n" + _NEG,
          "  %t = f32[] constant(0), dimensions={0}\n" + _NEG, 0, "unexpected attribute"),
    _case("attribute not allowed on negate", _NEG, _NEG + ", to_apply=%add", 0,
          "unexpected attribute 'to_apply'"),
    _case("result_accuracy mode",
          "  ROOT %r = f32[4] exponential(%p), result_accuracy={mode=highest}",
          "  ROOT %r = f32[4] exponential(%p), result_accuracy={mode=fast}", 0,
          "result_accuracy"),
    _case("result_accuracy tolerance key",
          "  ROOT %r = f32[4] exponential(%p), result_accuracy={tolerance={atol=0,rtol=0,ulps=2}}",
          "  ROOT %r = f32[4] exponential(%p), result_accuracy={tolerance={atol=0,foo=1}}", 0,
          "result_accuracy"),
    _case("custom-call api_version",
          '  ROOT %r = f32[4] custom-call(%p), custom_call_target="f", '
          "api_version=API_VERSION_TYPED_FFI",
          '  ROOT %r = f32[4] custom-call(%p), custom_call_target="f", api_version=API_VERSION_X',
          0, "api_version"),
    _case("custom-call api_version unspecified",
          '  ROOT %r = f32[4] custom-call(%p), custom_call_target="f", '
          "api_version=API_VERSION_ORIGINAL",
          '  ROOT %r = f32[4] custom-call(%p), custom_call_target="f", '
          "api_version=API_VERSION_UNSPECIFIED", 0, "api_version"),
    _case("malformed padding",
          "  %z = f32[] constant(0)\n  ROOT %r = f32[4] pad(%p, %z), padding=-1_1",
          "  %z = f32[] constant(0)\n  ROOT %r = f32[4] pad(%p, %z), padding=0x0", 1,
          "padding"),
    _case("use_global_device_ids without channel_id",
          "  ROOT %r = f32[4] all-reduce(%p), channel_id=1, replica_groups={{0}}, "
          "use_global_device_ids=true, to_apply=%add",
          "  ROOT %r = f32[4] all-reduce(%p), replica_groups={{0}}, use_global_device_ids=true, "
          "to_apply=%add", 0, "channel_id"),
    _case("call to an undefined computation", "  ROOT %r = f32[4] map(%p), dimensions={0}, "
          "to_apply=%c", "  ROOT %r = f32[4] map(%p), dimensions={0}, to_apply=%nope", 0,
          "computation nope is not defined"),
    SemanticCase("call to a computation defined below",
                 module("  ROOT %r = f32[4] map(%p), dimensions={0}, to_apply=%c"),
                 module("  ROOT %r = f32[4] map(%p), dimensions={0}, to_apply=%below")
                 + "\n%below (a: f32[]) -> f32[] {\n  ROOT %a = f32[] parameter(0)\n}\n",
                 BODY_LINE, "not defined above"),
    SemanticCase("a computation calling itself", module(_NEG),
                 module(_NEG).replace("  ROOT %a = f32[] parameter(0)\n}\n\n%c2",
                                      "  %a = f32[] parameter(0)\n  ROOT %k = f32[] call(%a), "
                                      "to_apply=%c\n}\n\n%c2", 1),
                 5, "not defined above"),
    _case("async-done on a non-async operand",
          "  %q = f32[] constant(1)\n  %s = ((f32[]), f32[]) async-start(%q), calls=%c\n"
          "  %d = f32[] async-done(%s)\n" + _NEG,
          "  %q = f32[] constant(1)\n  %d = f32[] async-done(%q)\n" + _NEG, 1,
          "single async-start"),
    _case("async-done on an async-done",
          "  %q = f32[] constant(1)\n  %s = ((f32[]), f32[]) async-start(%q), calls=%c\n"
          "  %u = ((f32[]), f32[]) async-update(%s)\n  %d = f32[] async-done(%u)\n" + _NEG,
          "  %q = f32[] constant(1)\n  %s = ((f32[]), f32[]) async-start(%q), calls=%c\n"
          "  %d = f32[] async-done(%s)\n  %d2 = f32[] async-done(%d)\n" + _NEG, 3,
          "single async-start"),
    _case("async-done wrapping another computation",
          "  %q = f32[] constant(1)\n  %s = ((f32[]), f32[]) async-start(%q), calls=%c\n"
          "  %d = f32[] async-done(%s), calls=%c\n" + _NEG,
          "  %q = f32[] constant(1)\n  %s = ((f32[]), f32[]) async-start(%q), calls=%c\n"
          "  %d = f32[] async-done(%s), calls=%c2\n" + _NEG, 2, "wrapped computation"),
    _case("async-done on another execution thread",
          '  %q = f32[] constant(1)\n  %s = ((f32[]), f32[]) async-start(%q), calls=%c, '
          'async_execution_thread="t"\n  %d = f32[] async-done(%s), async_execution_thread="t"\n'
          + _NEG,
          '  %q = f32[] constant(1)\n  %s = ((f32[]), f32[]) async-start(%q), calls=%c, '
          'async_execution_thread="t"\n  %d = f32[] async-done(%s), async_execution_thread="u"\n'
          + _NEG, 2, 'expected async_execution_thread to be "t"'),
    _case("async-start without calls",
          "  %q = f32[] constant(1)\n  %s = ((f32[]), f32[]) async-start(%q), calls=%c\n"
          "  %d = f32[] async-done(%s)\n" + _NEG,
          "  %q = f32[] constant(1)\n  %s = ((f32[]), f32[]) async-start(%q)\n"
          "  %d = f32[] async-done(%s)\n" + _NEG, 1, "calls"),
]
