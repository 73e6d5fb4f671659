"""XLA's own C++ HLO parser (jaxlib._hlo, a private API) as a test oracle, never a dependency."""
from __future__ import annotations

import re
from dataclasses import dataclass

from hloscope.model.scan import blank_block_comments
from hloscope.model.shape_text import parse_shape_prefix

_PRINTED = re.compile(r"\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*")


_ASYNC_OPCODES = {"kAsyncStart": "async-start", "kAsyncUpdate": "async-update",
                  "kAsyncDone": "async-done"}


@dataclass(frozen=True)
class OracleInstruction:
    name: str
    opcode: str
    shape_text: str


def xla_available() -> bool:
    try:
        from jaxlib import _hlo  # noqa: F401
    except Exception:
        return False
    return True


def split_modules(text: str) -> list[str]:
    """One text per `HloModule` (XLA's parser reads one module per call)."""
    starts = [m.start() for m in re.finditer(r"(?m)^HloModule\b", text)]
    if len(starts) <= 1:
        return [text]
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)], strict=True)]


def xla_parse(text: str) -> dict[str, list[OracleInstruction]]:
    """computation name -> its instructions, as XLA parses and prints them."""
    from jaxlib import _hlo

    module = _hlo.hlo_module_from_text(text)
    result: dict[str, list[OracleInstruction]] = {}
    for computation in module.computations():
        result[computation.name] = [
            _oracle_instruction(i.to_string(), i.name, i.opcode) for i in computation.instructions()
        ]
    return result


def _oracle_instruction(printed: str, name: str, opcode: object) -> OracleInstruction:
    printed = blank_block_comments(printed)
    head = _PRINTED.match(printed)
    assert head, printed
    _, end = parse_shape_prefix(printed, head.end())
    shape_text = " ".join(printed[head.end():end].split())
    opcode_name = printed[end:].split("(", 1)[0].strip()
    # XLA prints async ops by what they wrap (`custom-call-start`); the opcode is async-start.
    opcode_name = _ASYNC_OPCODES.get(str(opcode).rsplit(".", 1)[-1], opcode_name)
    return OracleInstruction(name, opcode_name, shape_text)


# Opcodes newer than the pinned XLA: replaced by a variadic one it knows, for the oracle only,
# with the attributes only the newer opcode has.
_NEWER_OPCODES = {"collective-reduce": "all-reduce"}
_NEWER_ATTRIBUTES = (", has_dynamic_root=true",)


def compare_with_xla(text: str, source: str) -> list[str]:
    """Disagreements between hloscope and XLA on every module of `text` (empty when none)."""
    from hloscope.model.shape_text import parse_shape
    from hloscope.parsers.text import parse_text

    ours = parse_text(text, source)
    texts = split_modules(text)
    assert len(texts) == len(ours), f"{len(texts)} module texts, {len(ours)} modules parsed"
    problems: list[str] = []
    for module_text, module in zip(texts, ours, strict=True):
        for newer, older in _NEWER_OPCODES.items():
            module_text = module_text.replace(f" {newer}(", f" {older}(")
        for attribute in _NEWER_ATTRIBUTES:
            module_text = module_text.replace(attribute, "")
        reference = xla_parse(module_text)
        if set(reference) != set(module.computations):
            problems.append(f"{module.name}: computations differ: "
                            f"{sorted(set(reference) ^ set(module.computations))}")
            continue
        for name, expected in reference.items():
            mine = module.computations[name].instructions
            if len(expected) != len(mine):
                problems.append(f"{name}: {len(expected)} instructions in XLA, {len(mine)} here")
                continue
            for want, got in zip(expected, mine, strict=True):
                opcode = _NEWER_OPCODES.get(got.opcode, got.opcode)
                if not _same_name(want.name, got.name) or want.opcode != opcode:
                    problems.append(f"{name}/{got.name}: {want.name} {want.opcode} vs {opcode}")
                elif not same_shape(parse_shape(want.shape_text), got.shape):
                    problems.append(f"{name}/{got.name}: {want.shape_text} vs {got.shape_text}")
    return problems


def _same_name(xla_name: str, our_name: str) -> bool:
    """XLA's parser makes names unique module-wide by renumbering their last `.N` suffix."""
    stem = re.sub(r"\.\d+$", "", our_name)
    return xla_name == our_name or re.fullmatch(re.escape(stem) + r"(\.\d+)?", xla_name) is not None


def same_shape(xla_shape, our_shape) -> bool:
    """Equal, where a shape written without a layout gets XLA's default one (descending)."""
    if xla_shape.is_tuple or our_shape.is_tuple:
        return (xla_shape.is_tuple and our_shape.is_tuple
                and len(xla_shape.tuple_shapes) == len(our_shape.tuple_shapes)
                and all(same_shape(a, b) for a, b in zip(xla_shape.tuple_shapes,
                                                         our_shape.tuple_shapes, strict=True)))
    if our_shape.layout is None:
        return xla_shape.without_layout() == our_shape.without_layout()
    return xla_shape == our_shape
