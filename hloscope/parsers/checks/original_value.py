"""An instruction's original value (`origin={...}`) has its shape's tuple structure, as XLA's
verifier checks it (xla/service/hlo_verifier.cc: VerifyOriginalValue): the leaves of the tree,
each a `{...}` original array (empty or not) at the index its parentheses and commas give, are
the shape's leaf indices; `{[synthetic_call]}` has none to match. A failure is a ParseError
(exit 4) at the attribute.
"""
from __future__ import annotations

from hloscope.model.instruction import Instruction
from hloscope.parsers.checks.collective_rules import fail


def _skip_array(text: str, start: int) -> int:
    """The offset after the `{...}` that starts at `start` (quoted names may hold braces)."""
    depth, i, quoted = 0, start, False
    while i < len(text):
        char = text[i]
        if quoted:
            if char == "\\":
                i += 1
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def leaf_indices(value: str) -> set[tuple[int, ...]] | None:
    """The shape indices of an original value's leaves; None for a synthetic call or a value
    this walk cannot read (the parser's own checks refuse those)."""
    body = value.strip()
    if not (body.startswith("{") and body.endswith("}")) or body[1:].lstrip().startswith("["):
        return None
    body = body[1:-1]
    index: list[int] = []
    found: set[tuple[int, ...]] = set()
    i = 0
    while i < len(body):
        char = body[i]
        if char == "(":
            index.append(0)
        elif char == ")" and index:
            index.pop()
        elif char == "," and index:
            index[-1] += 1
        elif char == "{":
            found.add(tuple(index))
            i = _skip_array(body, i)
            continue
        elif not char.isspace():
            return None
        i += 1
    return found


def check_original_value(instruction: Instruction) -> None:
    value = instruction.raw_attribute("origin")
    indices = leaf_indices(value) if value is not None else None
    if indices is None:
        return
    expected = {index for index, _ in instruction.shape.leaves()}
    if indices != expected:
        fail(instruction, f"Mismatched tuple structure in original_value for instruction "
                          f"{instruction.name}. Leaf indices in shape and original_value do not "
                          f"match: in shape only {sorted(expected - indices)}, in original_value "
                          f"only {sorted(indices - expected)}",
             instruction.text.find("origin=", instruction.operands_end))
