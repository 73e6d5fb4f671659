"""The semantic checks XLA's parser makes, run on a parsed module before any analysis sees it.

The text parser (`hloscope.parsers.text`) checks syntax and truncation; these check meaning, as
XLA's `ParseAndReturnUnverifiedModule` does: names and parameter numbers unique, operands and
control predecessors defined above their use, declared operand shapes, operand counts, the
attributes each opcode allows and their enum values, constant literals, `padding=`,
`use_global_device_ids`, called computations (defined above their caller, so calls never
form a cycle), async chains, `input_output_alias` and
`buffer_donor` (`xla_facts.py` holds what was probed from XLA); and, as XLA's verifier does, the
signatures of the computations fusions, calls, async-starts, while loops and conditionals run
(`signatures.py`). Each failure is a ParseError (exit
4) at file:line:col. A lenient load (`--lenient`, `lenient=True`) skips them, for hand-edited
modules; it never skips syntax or truncation errors.

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
from hloscope.parsers.checks.instructions import check_computation
from hloscope.parsers.checks.signatures import check_signatures

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
    above: dict[str, object] = {}  # computations defined above the one checked (XLA: callees first)
    memo: set[tuple[str, ...]] = set()
    for computation in module.computations.values():
        check_computation(computation, above, memo)
        above[computation.name] = computation
        if not _ASYNC_OPCODES.isdisjoint(map(_OPCODE, computation.instructions)):
            check_async_chains(computation)
    check_aliasing(module)
    check_signatures(module)


__all__ = ["check_module"]
