"""The per-opcode rules XLA's parser applies as it builds instructions (`checks/opcode_rules.py`),
its literal rules (NaN payloads, complex parts, u64) and its layout rules (dim level types, no
physical shape on a dense array): each fault in a hand-written module refused at its line with
exit 4, its valid counterpart loaded, and XLA's own parser (jaxlib) agreeing on both where it is
available."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from xla_oracle import xla_available

import hloscope
from hloscope.errors import ParseError

needs_xla = pytest.mark.skipif(not xla_available(), reason="jaxlib._hlo not available")


@dataclass(frozen=True)
class Rule:
    fault: str
    valid: str
    invalid: str
    line: int  # where the refusal is reported
    message: str


def _entry(body: str, result: str = "f32[4]", before: str = "") -> str:
    return (f"HloModule m\n{before}\nENTRY %e (p: f32[4]) -> {result} {{\n"
            f"  %p = f32[4] parameter(0)\n{body}\n}}\n")


_BRANCHES = """%b0 (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %c = f32[4] ceil(%x)
}

%b1 (y: f32[4]) -> f32[4] {
  %y = f32[4] parameter(0)
  ROOT %f = f32[4] floor(%y)
}
"""
_WRAPPED = """%w (a: f32[4]) -> f32[8] {
  %a = f32[4] parameter(0)
  ROOT %cc = f32[8] custom-call(%a), custom_call_target="foo"
}
"""
_ASYNC = "((f32[4]), f32[8], s32[])"
_LINE = 5  # the first line of the entry's body when `before` is empty

RULES = [
    Rule("infeed without a tuple shape",
         "  %t = token[] after-all()\n  %i = (f32[4], token[]) infeed(%t)\n"
         "  ROOT %g = f32[4] get-tuple-element(%i), index=0",
         "  %t = token[] after-all()\n  ROOT %i = f32[4] infeed(%t)",
         _LINE + 1, "infeed must have a non-empty tuple shape"),
    Rule("broadcast of an array without dimensions",
         "  %s = f32[] constant(1)\n  %b = f32[4] broadcast(%s)\n"
         "  %m = f32[4,4] broadcast(%p), dimensions={1}\n  ROOT %r = f32[4] add(%b, %p)",
         "  %m = f32[4,4] broadcast(%p)\n  ROOT %r = f32[4] negate(%p)",
         _LINE, "attribute dimensions is expected but not seen"),
    Rule("conditional branch index of f32",
         "  %k = s32[] constant(0)\n  ROOT %r = f32[4] conditional(%k, %p, %p), "
         "branch_computations={%b0, %b1}",
         "  %k = f32[] constant(0)\n  ROOT %r = f32[4] conditional(%k, %p, %p), "
         "branch_computations={%b0, %b1}",
         _LINE + 1, "must be a scalar of PRED or S32"),
    Rule("conditional branch index not a scalar",
         "  %k = s32[] constant(0)\n  ROOT %r = f32[4] conditional(%k, %p, %p), "
         "branch_computations={%b0, %b1}",
         "  %k = s32[2] constant({0, 1})\n  ROOT %r = f32[4] conditional(%k, %p, %p), "
         "branch_computations={%b0, %b1}",
         _LINE + 1, "must be a scalar"),
    Rule("pred conditional with branch_computations",
         "  %k = pred[] constant(true)\n  ROOT %r = f32[4] conditional(%k, %p, %p), "
         "true_computation=%b0, false_computation=%b1",
         "  %k = pred[] constant(true)\n  ROOT %r = f32[4] conditional(%k, %p, %p), "
         "branch_computations={%b0, %b1}",
         _LINE + 1, 'unexpected attribute "branch_computations"'),
    Rule("custom-call with too few layout constraints",
         "  ROOT %r = f32[4]{0} custom-call(%p, %p), custom_call_target=\"t\", "
         "operand_layout_constraints={f32[4]{0}, f32[4]{0}}",
         "  ROOT %r = f32[4]{0} custom-call(%p, %p), custom_call_target=\"t\", "
         "operand_layout_constraints={f32[4]{0}}",
         _LINE, "Expected 2 operand layout constraints, 1 given"),
    Rule("custom-call layout constraint of another shape",
         "  ROOT %r = f32[4]{0} custom-call(%p), custom_call_target=\"t\", "
         "operand_layout_constraints={f32[4]{0}}",
         "  ROOT %r = f32[4]{0} custom-call(%p), custom_call_target=\"t\", "
         "operand_layout_constraints={f32[5]{0}}",
         _LINE, "is not compatible with operand shape"),
    Rule("async-start shape without the operands' tuple",
         f"  %s = {_ASYNC} async-start(%p), calls=%w\n  %d = f32[8] async-done(%s)\n"
         "  ROOT %r = f32[4] negate(%p)",
         "  %s = (f32[4], f32[8], s32[]) async-start(%p), calls=%w\n"
         "  %d = f32[8] async-done(%s)\n  ROOT %r = f32[4] negate(%p)",
         _LINE, "((async-operands), async-outputs, state)"),
    Rule("async-update of another shape than its operand",
         f"  %s = {_ASYNC} async-start(%p), calls=%w\n  %u = {_ASYNC} async-update(%s)\n"
         "  %d = f32[8] async-done(%u)\n  ROOT %r = f32[4] negate(%p)",
         f"  %s = {_ASYNC} async-start(%p), calls=%w\n"
         "  %u = ((f32[4]), f32[9], s32[]) async-update(%s)\n"
         "  %d = f32[8] async-done(%u)\n  ROOT %r = f32[4] negate(%p)",
         _LINE + 1, "async-update expects its shape to be its operand's"),
    Rule("shorthand done of another op than its start",
         f"  %s = {_ASYNC} custom-call-start(%p), custom_call_target=\"foo\"\n"
         "  %d = f32[8] custom-call-done(%s)\n  ROOT %r = f32[4] negate(%p)",
         f"  %s = {_ASYNC} custom-call-start(%p), custom_call_target=\"foo\"\n"
         "  %d = f32[8] add-done(%s)\n  ROOT %r = f32[4] negate(%p)",
         _LINE + 1, "expected the async wrapped opcode to be custom-call, but got add"),
    Rule("one async computation called by two async-starts",
         f"  %s = {_ASYNC} async-start(%p), calls=%w\n  %d = f32[8] async-done(%s)\n"
         "  ROOT %r = f32[4] negate(%p)",
         f"  %s = {_ASYNC} async-start(%p), calls=%w\n  %d = f32[8] async-done(%s)\n"
         f"  %s2 = {_ASYNC} async-start(%p), calls=%w\n  %d2 = f32[8] async-done(%s2)\n"
         "  ROOT %r = f32[4] negate(%p)",
         _LINE + 2, "is called by more than one async op"),
    Rule("window pad with an interior part",
         "  %k = f32[1,1,1] constant({{{1}}})\n  %i = f32[1,4,1] reshape(%p)\n"
         "  %v = f32[1,4,1] convolution(%i, %k), window={size=1 pad=0_0}, dim_labels=b0f_0io->b0f\n"
         "  ROOT %r = f32[4] reshape(%v)",
         "  %k = f32[1,1,1] constant({{{1}}})\n  %i = f32[1,4,1] reshape(%p)\n"
         "  %v = f32[1,4,1] convolution(%i, %k), window={size=1 pad=0_0_0}, "
         "dim_labels=b0f_0io->b0f\n  ROOT %r = f32[4] reshape(%v)",
         _LINE + 2, "expects padding_low and padding_high separated by '_'"),
    Rule("computation result shape not its root's",
         "  ROOT %r = f32[4] negate(%p)",
         "  ROOT %r = f32[2,2] reshape(%p)",
         3, "is not compatible with that of its root instruction r"),
    Rule("dim level type not one of XLA's",
         "  ROOT %r = f32[4]{0:D(C+)} negate(%p)",
         "  ROOT %r = f32[4]{0:D(X)} negate(%p)",
         _LINE, "expected a DimLevelType abbreviation"),
    Rule("physical shape in a dense array's layout",
         "  ROOT %r = f32[4]{0:T(128)} negate(%p)",
         "  ROOT %r = f32[4]{0:T(128)P(f32[4])} negate(%p)",
         _LINE, "layout has a physical shape"),
    Rule("u32 constant of -1 (u64 takes it)",
         "  %k = u64[] constant(-1)\n  ROOT %r = f32[4] negate(%p)",
         "  %k = u32[] constant(-1)\n  ROOT %r = f32[4] negate(%p)",
         _LINE, "out of range for u32"),
    Rule("bf16 NaN payload over 7 bits",
         "  %k = bf16[2] constant({-nan(0x7f), nan})\n  ROOT %r = f32[4] negate(%p)",
         "  %k = bf16[2] constant({nan(0x3ff), nan})\n  ROOT %r = f32[4] negate(%p)",
         _LINE, "NaN payload is out of range (0x7f)"),
    Rule("NaN payload on f8e4m3fn",
         "  %k = f8e4m3fn[2] constant({nan, -nan})\n  ROOT %r = f32[4] negate(%p)",
         "  %k = f8e4m3fn[2] constant({nan(0x1), -nan})\n  ROOT %r = f32[4] negate(%p)",
         _LINE, "f8e4m3fn does not support payloads"),
    Rule("c64 part out of f32's range",
         "  %k = c64[] constant((1e30, -1e30))\n  ROOT %r = f32[4] negate(%p)",
         "  %k = c64[] constant((0, -1e100))\n  ROOT %r = f32[4] negate(%p)",
         _LINE, "part -1e100 is out of range for c64"),
]
_BEFORE = {"conditional": _BRANCHES, "async": _WRAPPED}


def _before(rule: Rule) -> str:
    return next((text for key, text in _BEFORE.items() if key in rule.fault), "")


def _module(rule: Rule, body: str) -> str:
    return _entry(body, before=_before(rule))


def _line(rule: Rule) -> int:
    return rule.line + _before(rule).count("\n")


IDS = [rule.fault for rule in RULES]


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_fault_refused_at_its_line(rule: Rule, tmp_path: Path) -> None:
    path = tmp_path / "bad.hlo"
    path.write_text(_module(rule, rule.invalid))
    with pytest.raises(ParseError) as caught:
        hloscope.load(path)
    assert rule.message in caught.value.message
    assert caught.value.exit_code == 4
    assert caught.value.location.line == _line(rule)


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_valid_counterpart_loads(rule: Rule) -> None:
    hloscope.load(_module(rule, rule.valid))


def _xla_accepts(text: str) -> bool:
    from jaxlib import _hlo

    try:
        _hlo.hlo_module_from_text(text)
    except Exception:  # noqa: BLE001  (any refusal)
        return False
    return True


@needs_xla
@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_xla_agrees(rule: Rule) -> None:
    assert _xla_accepts(_module(rule, rule.valid))
    assert not _xla_accepts(_module(rule, rule.invalid))


def test_fusion_may_pass_more_operands_than_parameters() -> None:
    # XLA's verifier refuses only more parameters than operands (its FusionMoreOperandsThan-
    # Parameters test passes); the extra operand is unused, and every analysis runs.
    text = ("HloModule m, is_scheduled=true\n\n%fc (a: f32[4]) -> f32[4] {\n"
            "  ROOT %a = f32[4] parameter(0)\n}\n\nENTRY %e (p: f32[4], q: f32[4]) -> f32[4] {\n"
            "  %p = f32[4] parameter(0)\n  %q = f32[4] parameter(1)\n"
            "  ROOT %f = f32[4] fusion(%p, %q), kind=kLoop, calls=%fc\n}\n")
    module = hloscope.load(text)
    assert hloscope.flops(module).total.flops == 0  # a parameter passed through
    assert hloscope.memory(module).peak_bytes >= 32  # both parameters live at the fusion
    hloscope.inspect(module)
    hloscope.remat(module)
    fewer = (text.replace("fusion(%p, %q)", "fusion(%p)")
             .replace("(a: f32[4])", "(a: f32[4], b: f32[4])")
             .replace("  ROOT %a", "  %b = f32[4] parameter(1)\n  ROOT %a"))
    with pytest.raises(ParseError, match="passes 1 operand"):
        hloscope.load(fewer)
