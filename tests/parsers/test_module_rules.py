"""Rules of XLA's verifier across a module's instructions (`checks/module_rules.py`), on
hand-built modules after the examples of XLA's hlo_verifier_test.cc: all-reduces all layout
constrained or none, host-transfer sends of one channel identical, async computations trivial.
Each fault refused at its line and column with exit 4, the valid form loads, and a lenient load
lets the fault through."""
from __future__ import annotations

from located_refusal import assert_refused_at as _refused

import hloscope

_ALL_REDUCES = """HloModule m

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

ENTRY %e {
  %p = f32[8,12]{0,1} parameter(0)
  %a = f32[8,12]{0,1} all-reduce(%p), replica_groups={}, to_apply=%add{first}
  %b = f32[8,12]{0,1} all-reduce(%p), replica_groups={}, to_apply=%add{second}
  ROOT %t = (f32[8,12]{0,1}, f32[8,12]{0,1}) tuple(%a, %b)
}
"""


def _all_reduces(first: str, second: str) -> str:
    return _ALL_REDUCES.replace("{first}", first).replace("{second}", second)


def test_all_reduces_all_or_none_layout_constrained() -> None:
    constrained = ", constrain_layout=true"
    hloscope.load(_all_reduces("", ""))
    hloscope.load(_all_reduces(constrained, constrained))
    _refused(_all_reduces("", constrained),
             "HloModule has a mix of layout constrained and unconstrained AllReduce", 12,
             "), replica_groups")


def _sends(first: str, second: str) -> str:
    return ("HloModule m\n\nENTRY %e {\n  %c0 = f32[] constant(0)\n"
            "  %after = token[] after-all()\n"
            f"  %s0 = (f32[], u32[], token[]) send(%c0, %after), channel_id=1, "
            f"is_host_transfer=true{first}\n"
            "  %d0 = token[] send-done(%s0), channel_id=1, is_host_transfer=true\n"
            f"  %c1 = {second} constant({{...}})\n"
            f"  %s1 = ({second}, u32[], token[]) send(%c1, %d0), channel_id=1, "
            "is_host_transfer=true\n"
            "  ROOT %d1 = token[] send-done(%s1), channel_id=1, is_host_transfer=true\n}\n")


def test_host_transfers_of_one_channel_are_identical() -> None:
    hloscope.load(_sends("", "f32[]").replace("{...}", "1"))
    _refused(_sends("", "f32[10]").replace("{...}", "{1,1,1,1,1,1,1,1,1,1}"),
             "Host-transfer send/recv instructions that use the same channel must be identical",
             9, "%c1, %d0")
    _refused(_sends(', frontend_attributes={_xla_host_transfer_rendezvous="_foo"}', "f32[]")
             .replace("{...}", "1"),
             "Host-transfer send/recv instructions that use the same channel must be identical",
             9, "%c1, %d0")


_ASYNC = """HloModule m

%wrapped (p: f32[2,3]) -> f32[3,2] {{
  %p = f32[2,3] parameter(0){body}
  ROOT %c = f32[3,2] custom-call({operand}), custom_call_target="foo"
}}

ENTRY %e {{
  %p0 = f32[2,3] parameter(0)
  %s = ((f32[2,3]), f32[3,2], u32[]) async-start(%p0), calls=%wrapped{attributes}
  ROOT %d = f32[3,2] async-done(%s), calls=%wrapped
}}
"""


def test_async_computation_holds_its_root_and_parameters_only() -> None:
    hloscope.load(_ASYNC.format(body="", operand="%p", attributes=""))
    nontrivial = {"body": "\n  %copy = f32[2,3] copy(%p)", "operand": "%copy"}
    hloscope.load(_ASYNC.format(**nontrivial,
                                attributes=", frontend_attributes={_collectives_group=\"1\"}"))
    _refused(_ASYNC.format(**nontrivial, attributes=""),
             "Asynchronous computation wrapped expected to contain only the root and parameter "
             "instructions.", 5, "%p)")
