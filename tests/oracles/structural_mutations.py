"""Mutations of HLO text that keep its syntax, so that the module still loads and its analyses run.

`mutations.py` garbles text (most of its inputs stop at the parser); these change one thing an
analysis reads while the text stays well-formed: a tuple index, a dimension, an element type, a
layout, a parameter number, an operand, a called computation, an opcode of the same arity, a
dropped attribute, a moved ROOT, a tuple shape with an element added or lost, the schedule flag.
Each picks its target with `rng` among the matches of a regex over the whole text; a text with no
match comes back unchanged.
"""
from __future__ import annotations

import random
import re
from collections.abc import Callable

_INDEX = re.compile(r"(?<=index=)\d+")
_DIMENSION = re.compile(r"(?<=[a-z0-9]\[)([\d,]*?)(\d+)(?=[\],])")
_ELEMENT_TYPE = re.compile(r"\b(?:f32|bf16|f16|s32|u32|pred|s8|f64)(?=\[)")
_LAYOUT = re.compile(r"(?<=\])\{([\d,]+)\}")
_PARAMETER = re.compile(r"(?<=parameter\()\d+(?=\))")
_OPERAND = re.compile(r"(?<=[(,] )%[\w.\-]+|(?<=\()%[\w.\-]+")
_NAME = re.compile(r"^\s*(?:ROOT\s+)?(%?[\w.\-]+)\s*=", re.M)
_CALLED = re.compile(r"\b(calls|to_apply|body|condition|true_computation|false_computation)="
                     r"%?[\w.\-]+")
_COMPUTATION = re.compile(r"^(?:ENTRY\s+)?(%?[\w.\-]+)\s*\(", re.M)
_ATTRIBUTE = re.compile(r", [a-z_]+=(?:\{[^{}]*\}|[^,{}\s]+)")
_ROOT = re.compile(r"^(\s*)ROOT\s+", re.M)
_INSTRUCTION_LINE = re.compile(r"^(\s*)(%?[\w.\-]+\s*=)", re.M)
_TUPLE_SHAPE = re.compile(r"= \(([^()]*)\) ")
_SCHEDULED = re.compile(r"is_scheduled=(true|false)")
_SAME_ARITY = (("add", "multiply", "subtract", "maximum", "minimum", "divide"),
               ("negate", "exponential", "tanh", "abs", "copy", "sqrt", "log"),
               ("while", "call"), ("all-reduce-start", "all-reduce"))
_ELEMENT_TYPES = ("f32", "bf16", "s32", "pred", "u8", "f64", "token")


def _replace_match(text: str, pattern: re.Pattern[str], rng: random.Random,
                   value: Callable[[re.Match[str]], str]) -> str:
    matches = list(pattern.finditer(text))
    if not matches:
        return text
    match = rng.choice(matches)
    return text[: match.start()] + value(match) + text[match.end() :]


def _tuple_index(text: str, rng: random.Random) -> str:
    return _replace_match(text, _INDEX, rng, lambda m: str(rng.choice((0, 1, 2, 3, 7))))


def _dimension(text: str, rng: random.Random) -> str:
    return _replace_match(text, _DIMENSION, rng,
                          lambda m: m.group(1) + str(rng.choice((0, 1, 2, 3, 16, 4096))))


def _element_type(text: str, rng: random.Random) -> str:
    return _replace_match(text, _ELEMENT_TYPE, rng, lambda m: rng.choice(_ELEMENT_TYPES))


def _layout(text: str, rng: random.Random) -> str:
    def shuffled(match: re.Match[str]) -> str:
        items = match.group(1).split(",")
        rng.shuffle(items)
        return "{" + ",".join(items[: rng.randint(max(len(items) - 1, 1), len(items))]) + "}"

    return _replace_match(text, _LAYOUT, rng, shuffled)


def _parameter_number(text: str, rng: random.Random) -> str:
    return _replace_match(text, _PARAMETER, rng, lambda m: str(rng.choice((0, 1, 2, 5))))


def _operand(text: str, rng: random.Random) -> str:
    names = [m.group(1) for m in _NAME.finditer(text)]
    if not names:
        return text
    return _replace_match(text, _OPERAND, rng,
                          lambda m: ("%" if m.group(0).startswith("%") else "")
                          + rng.choice(names).lstrip("%"))


def _called_computation(text: str, rng: random.Random) -> str:
    names = [m.group(1).lstrip("%") for m in _COMPUTATION.finditer(text)]
    if not names:
        return text
    return _replace_match(text, _CALLED, rng, lambda m: f"{m.group(1)}=%{rng.choice(names)}")


def _opcode(text: str, rng: random.Random) -> str:
    family = rng.choice(_SAME_ARITY)
    pattern = re.compile(r"(?<= )(?:" + "|".join(map(re.escape, family)) + r")(?=\()")
    return _replace_match(text, pattern, rng, lambda m: rng.choice(family))


def _drop_attribute(text: str, rng: random.Random) -> str:
    return _replace_match(text, _ATTRIBUTE, rng, lambda m: "")


def _move_root(text: str, rng: random.Random) -> str:
    roots = list(_ROOT.finditer(text))
    if not roots:
        return text
    root = rng.choice(roots)
    text = text[: root.start()] + root.group(1) + text[root.end() :]
    start = text.rfind("{\n", 0, root.start()) + 2
    lines = [m for m in _INSTRUCTION_LINE.finditer(text) if start <= m.start() <= root.start()]
    if not lines:
        return text
    line = rng.choice(lines)
    return text[: line.start(2)] + "ROOT " + text[line.start(2) :]


def _tuple_shape(text: str, rng: random.Random) -> str:
    def changed(match: re.Match[str]) -> str:
        items = [item for item in match.group(1).split(", ") if item]
        if items and rng.random() < 0.5:
            del items[rng.randrange(len(items))]
        else:
            items.insert(rng.randrange(len(items) + 1), rng.choice(("f32[]", "s32[4]{0}", "()")))
        return "= (" + ", ".join(items) + ") "

    return _replace_match(text, _TUPLE_SHAPE, rng, changed)


def _schedule_flag(text: str, rng: random.Random) -> str:
    return _replace_match(text, _SCHEDULED, rng,
                          lambda m: "is_scheduled=" + ("false" if m.group(1) == "true" else "true"))


STRUCTURAL_MUTATIONS: dict[str, Callable[[str, random.Random], str]] = {
    "tuple_index": _tuple_index, "dimension": _dimension, "element_type": _element_type,
    "layout": _layout, "parameter_number": _parameter_number, "operand": _operand,
    "called_computation": _called_computation, "opcode": _opcode,
    "drop_attribute": _drop_attribute, "move_root": _move_root, "tuple_shape": _tuple_shape,
    "schedule_flag": _schedule_flag,
}


def mutate_structure(text: str, rng: random.Random, kind: str | None = None) -> tuple[str, str]:
    """(mutation kind, mutated text): one structural mutation of `text`."""
    kind = kind or rng.choice(sorted(STRUCTURAL_MUTATIONS))
    return kind, STRUCTURAL_MUTATIONS[kind](text, rng)
