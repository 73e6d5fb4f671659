"""The C accelerator (hloscope._native) reads exactly what the pure-Python parser reads.

Every other parser test runs both ways against XLA's parser, the corpus and hand-written modules
(tests/native_modes.py). These compare the two implementations directly, on inputs chosen to
reach the accelerator's edges: every corpus file and seed module, seeded mutations of them (a
load gives the same module, or the same error at the same file:line:col), and each C function
against its Python original on random strings over HLO's punctuation.
"""
from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from conftest import corpus_files
from mutations import mutate, seed_modules
from native_modes import switch_off

import hloscope
from hloscope._native import scan
from hloscope.errors import HloscopeError
from hloscope.model import attributes
from hloscope.model.instruction import Instruction
from hloscope.model.shape_text import TextSyntaxError
from hloscope.parsers.validate import validate

pytestmark = pytest.mark.skipif(scan is None, reason="the C accelerator is not built")
BOTH_WAYS_ITSELF = True  # tests/native_modes.py: not parametrized by the parser mode


def _snapshot(text: str) -> Any:
    """What a load with its checks and then validation gives, and what a lenient load (no
    semantic checks) and validation give: the modules as plain tuples, or the error's class,
    message and location."""
    return _loaded(text, lenient=False), _loaded(text, lenient=True)


def _loaded(text: str, lenient: bool) -> Any:
    try:
        modules = hloscope.load_all(text, lenient=lenient)
        for module in modules:
            validate(module)
    except HloscopeError as error:
        location = getattr(error, "location", None)
        return type(error).__name__, str(error), location and (location.line, location.column)
    return [
        (m.name, m.entry_name, m.byte_size, m.header_text, m.has_header, [
            (c.name, c.line, c.is_entry, c.header_parameters, c.header_result,
             c.execution_thread, [
                 (i.name, i.opcode, i.shape_text, i.text, i.operands_start, i.operands_end,
                  i.line, i.is_root, i.source, i.operands, tuple(i._attribute_spans().items()))
                 for i in c.instructions])
            for c in m.computations.values()])
        for m in modules]


def _both_ways(function: Callable[[], Any], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    with_native = function()
    with monkeypatch.context() as patch:
        switch_off(patch)
        without = function()
    return with_native, without


def _texts() -> list[tuple[str, str]]:
    found = [(name, text) for name, text in seed_modules()]
    found += [(f.path.name, f.path.read_text()) for f in corpus_files()
              if f.path.stat().st_size < 300_000]
    return found


@pytest.mark.parametrize("name, text", _texts(), ids=[name for name, _ in _texts()])
def test_whole_files_load_the_same(name: str, text: str,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    ours, python = _both_ways(lambda: _snapshot(text), monkeypatch)
    assert ours == python


def test_mutated_modules_load_the_same_or_fail_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(20)
    seeds = seed_modules()
    for _ in range(400):
        _, text = seeds[rng.randrange(len(seeds))]
        mutated, kind = mutate(text, rng)
        ours, python = _both_ways(lambda mutated=mutated: _snapshot(mutated), monkeypatch)
        assert ours == python, kind


def test_hand_written_edges_load_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    body = [
        "  p = f32[4]{0} parameter(0)",
        "  q = f32[4]{0} parameter(1), metadata={op_name=\"a\\\"b\" source_line=3}",
        "  ROOT = f32[4]{0} add(p, q)",                 # an instruction named ROOT
        "  ROOTx = f32[4]{0} add(p, q)",
        "  t = (f32[4]{0}, f32[4]{0}) tuple(p, /*index=1*/q)",
        "  t2 = (f32[4]{0}, f32[4]{0}) tuple(p, /*index=1*/q)",
        "  t3 = (f32[4]{0}, /*c*/f32[4]{0}) tuple(p, q)",
        "  a\t=\tf32[4]{0}\tmultiply(p,q),\tbackend_config={\"x\":{\"y\":{\"z\":{\"w\":[1]}}}}",
        "  b = f32[4]{0} add(%p , %q ) , sharding={replicated}",
        "  c = f32[4]{0} negate(p), frontend_attributes={k=\"v\",k2=\"é\"}",
        "  d = f32[4]{0} negate(c), metadata={op_name=\"x\" source_file=/a/b.py}",
        "  e = f32[4]{0} add(p, q), calls = %none",
        "  f = f32[4]{0} add(p,, q)",
        "  g = f32[4]{0} add(p, undefined)",
        "  h = f32[4]{0} reduce(p, q), dimensions={x}, to_apply=%nowhere",
        "  i = f32[4]{0} fusion(p), kind=kLoop, calls={%a b}",
        "  j = f32[4]{0} broadcast(p), dimensions={0}, metadata={op_name=\"y\" source_line=x}",
        "  k = f32[4]{0} copy(p), backend_config={not json}, frontend_attributes={a=\"b\"}",
        "  l = f32[4]{0} copy(p), control-predecessors={%q}, feature_group_count=x",
        "",
        "  \t",
        "  ROOT r = f32[4]{0} add(p, q)",
    ]
    rng = random.Random(4)
    for _ in range(300):
        lines = rng.sample(body, rng.randrange(1, len(body) + 1))
        text = "HloModule m\n\nENTRY e (p: f32[4], q: f32[4]) -> f32[4] {\n" + \
            "\n".join(lines) + "\n}\n"
        ours, python = _both_ways(lambda text=text: _snapshot(text), monkeypatch)
        assert ours == python, text


_ALPHABET = list('ab_=,{}[]()"\\/*% \t\n01-.x:') + ["k=", "/*i*/", '"s"', "{a}", "op_name="]


_VALUES = ('"a b"', '"x\\"y"', "bare", "3", "{1,0}", '{"k":[1,{"m":2}]}', "[2]<=[2]", "a/b",
           "x}", '"open', "{a", "", "%c", "(1,2)", '"é"')
_SEPARATORS = (" ", ",", ", ", "\t", "\n", "  ,", "")


def _random_text(rng: random.Random, length: int = 24) -> str:
    """Noise over HLO's punctuation, or (as often) a `key=value` list with some noise in it."""
    if rng.random() < 0.5:
        return "".join(rng.choice(_ALPHABET) for _ in range(rng.randrange(length)))
    items = [f"{rng.choice(['k', 'op_name', 'x.y-z', '_1', '1a'])}{rng.choice(['=', ' = ', '='])}"
             f"{rng.choice(_VALUES)}" for _ in range(rng.randrange(1, 5))]
    text = "".join(item + rng.choice(_SEPARATORS) for item in items)
    if rng.random() < 0.2:
        spot = rng.randrange(len(text) + 1)
        text = text[:spot] + rng.choice(_ALPHABET) + text[spot:]
    return text


def _outcome(function: Callable[[], Any]) -> Any:
    try:
        return function()
    except (TextSyntaxError, HloscopeError) as error:
        return "error", type(error).__name__


def _agrees_where_it_answers(native_call: Callable[[str], Any],
                             python_call: Callable[[str], Any],
                             monkeypatch: pytest.MonkeyPatch, prefix: str = "") -> int:
    """The native function answers (not None) only where the Python one gives the same value;
    returns how many random texts it answered, so a test can see it is exercised."""
    rng = random.Random(7)
    answered = 0
    for _ in range(4000):
        text = prefix + _random_text(rng)
        ours = native_call(text)
        if ours is None:
            continue
        answered += 1
        with monkeypatch.context() as patch:
            switch_off(patch)
            assert _outcome(lambda text=text: python_call(text)) == ours, repr(text)
    return answered


def test_split_simple_matches_the_regex(monkeypatch: pytest.MonkeyPatch) -> None:
    answered = _agrees_where_it_answers(lambda t: scan.split_simple(t, 0),
                                        lambda t: attributes._split_simple(t, 0), monkeypatch,
                                        prefix="k=")
    assert answered > 100


def test_split_general_matches_split_top_level(monkeypatch: pytest.MonkeyPatch) -> None:
    answered = _agrees_where_it_answers(lambda t: scan.split_general(t, 0),
                                        lambda t: attributes.split_attributes(t, 0), monkeypatch,
                                        prefix="k=")
    assert answered > 100


def test_key_values_match(monkeypatch: pytest.MonkeyPatch) -> None:
    answered = _agrees_where_it_answers(lambda t: scan.key_values("{" + t + "}"),
                                        lambda t: attributes.key_values("{" + t + "}"),
                                        monkeypatch)
    assert answered > 100


def _instruction(operands: str, rest: str = "") -> Instruction:
    text = f"x = f32[] add({operands}){rest}\n"
    start = text.index("(") + 1
    return Instruction("x", "add", "f32[]", text, start, start + len(operands), 1, False, "t")


def test_operand_lists_match(monkeypatch: pytest.MonkeyPatch) -> None:
    answered = _agrees_where_it_answers(
        lambda t: scan.plain_operands(t, 0, len(t)) if "(" not in t and ")" not in t else None,
        lambda t: _instruction(t).operands, monkeypatch)
    assert answered > 100


def test_attribute_spans_match(monkeypatch: pytest.MonkeyPatch) -> None:
    answered = _agrees_where_it_answers(
        lambda t: scan.attribute_spans(_instruction("a", t).text, 16),
        lambda t: _instruction("a", t)._split_attributes(), monkeypatch, prefix=", k=")
    assert answered > 100


def test_the_environment_variable_switches_it_off() -> None:
    code = "import hloscope._native as n, hloscope.parsers.text as t; print(n.scan, t.native)"
    for value, expected in (("1", "None None"), ("", "_scan")):
        env = {**os.environ, "HLOSCOPE_NO_NATIVE": value}
        shown = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                               text=True, check=True).stdout
        assert expected in shown, (value, shown)
