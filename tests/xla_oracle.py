"""XLA's own C++ HLO parser (jaxlib._hlo, a private API) as a test oracle; never a runtime dependency."""
from __future__ import annotations

import re
from dataclasses import dataclass

from hloscope.parsers.scan import blank_block_comments
from hloscope.parsers.shape_text import parse_shape_prefix

_PRINTED = re.compile(r"\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*")


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
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


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
    return OracleInstruction(name, opcode_name, shape_text)
