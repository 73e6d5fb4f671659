"""The semantic checks XLA's parser makes, run on a parsed module before any analysis sees it.

The text parser (`hloscope.parsers.text`) checks syntax and truncation; these check meaning, as
XLA's `ParseAndReturnUnverifiedModule` does: names and parameter numbers unique, operands and
control predecessors defined above their use, declared operand shapes, operand counts, the
attributes each opcode allows and their enum values, constant literals, `padding=`,
`use_global_device_ids`, called computations (defined above their caller, so calls never form a
cycle), async chains, `input_output_alias` and `buffer_donor` (`xla_facts.py` holds what was
probed from XLA), the shape rules it applies to some opcodes and to computation headers
(`opcode_rules.py`); and, as XLA's verifier does, the signatures of the computations fusions,
calls, async-starts, while loops and conditionals run (`signatures.py`), asynchronous pairs
(`async_pairs.py`), opcode, collective, sharding and cross-instruction rules
(`verifier_rules.py` and the modules it names) and buffer shapes (`buffer_rules.py`, on modules
that hold one). Each failure is a ParseError (exit 4) at file:line:col. A lenient load
(`--lenient`, `lenient=True`) skips them but the signatures, which every analysis relies on, for
hand-edited modules; it never skips syntax or truncation errors, and warns of what it let through
that old XLAs wrote (`lenient_warnings`: `api_version=API_VERSION_UNSPECIFIED`).

One pass over the instructions: attributes are looked at only where a regex over the text after the
operands finds a key that needs it, and what passed once (a constant's literal for its shape, an
opcode's set of attribute keys) is not checked again, so a load stays fast. Every check runs by
default; none is deferred to a stricter mode.
"""
from __future__ import annotations

from operator import attrgetter

from hloscope.gc_pause import paused_gc
from hloscope.model.module import HloModule
from hloscope.parsers.checks.aliasing import check_aliasing
from hloscope.parsers.checks.async_chains import check_async_chains
from hloscope.parsers.checks.async_pairs import check_async_pairs
from hloscope.parsers.checks.buffer_rules import check_buffers
from hloscope.parsers.checks.instructions import check_computation
from hloscope.parsers.checks.opcode_rules import check_opcode_rules
from hloscope.parsers.checks.signatures import check_signatures
from hloscope.parsers.checks.verifier_rules import check_verifier_rules
from hloscope.parsers.checks.xla_facts import UNSPECIFIED_API_VERSION

_ASYNC_OPCODES = frozenset({"async-start", "async-update", "async-done"})
_OPCODE = attrgetter("opcode")


def check_module(module: HloModule) -> None:
    """Raises a ParseError (exit 4, file:line:col) at the first thing XLA's parser refuses.

    Python's cyclic collector is paused meanwhile: the pass allocates small temporaries while the
    module holds hundreds of thousands of objects, and each automatic collection would traverse
    them all (the pass makes no reference cycles)."""
    with paused_gc():
        _check(module)


def _check(module: HloModule) -> None:
    module.num_partitions, module.replica_count  # noqa: B018  (integers, as XLA reads them)
    above: dict[str, object] = {}  # computations defined above the one checked (XLA: callees first)
    memo: set[tuple[str, ...]] = set()
    for computation in module.computations.values():
        check_computation(computation, above, memo)
        above[computation.name] = computation
        if not _ASYNC_OPCODES.isdisjoint(map(_OPCODE, computation.instructions)):
            check_async_chains(computation)
    check_aliasing(module)
    check_opcode_rules(module)
    check_signatures(module)
    check_async_pairs(module)
    if check_verifier_rules(module):
        check_buffers(module)


def lenient_warnings(module: HloModule) -> list[str]:
    """What a lenient load lets through that XLA's parser refuses and old XLAs wrote, one line
    each: custom-calls with api_version=API_VERSION_UNSPECIFIED (hloscope reads nothing from
    api_version)."""
    found = [i for c in module.computations.values() for i in c.instructions
             if i.opcode == "custom-call" and UNSPECIFIED_API_VERSION in i.text]
    if not found:
        return []
    first = found[0]
    where = first.location(max(first.text.find(UNSPECIFIED_API_VERSION), 0))
    return [f"warning: {where}: api_version={UNSPECIFIED_API_VERSION} accepted under --lenient on "
            f"{len(found)} custom-call(s) (the first here); XLA's parser refuses it, and hloscope "
            "reads nothing from api_version"]


__all__ = ["check_module", "lenient_warnings"]
