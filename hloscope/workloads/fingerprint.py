"""A fingerprint of an optimized HLO program that ignores where its ops came from (no jax).

Two variants compile to "the same program" when their after-optimizations HLO text is equal
once source information is removed: `metadata={...}` (op names, source files and lines, stack
frame ids) and the stack-frame tables TPU and GPU dumps print after the module header
(`FileNames`, `FunctionNames`, `FileLocations`, `StackFrames`, each up to a blank line).
Instruction names, shapes, layouts, schedules and backend configs all count. Plain
`jax.checkpoint` and `checkpoint_policies.nothing_saveable`, for example, differ only in
metadata, so a sweep compiles both and reports the program once.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

_QUOTED = r'"(?:\\.|[^"\\])*"'
_METADATA = re.compile(r",?\s*metadata=\{(?:[^{}\"]|" + _QUOTED + r")*\}")
_TABLE_HEADERS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


def normalized_hlo(text: str) -> str:
    """The HLO text without metadata, stack-frame tables and trailing blanks."""
    lines: list[str] = []
    in_table = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped in _TABLE_HEADERS:
            in_table = True
        elif in_table:
            in_table = bool(stripped)
        else:
            lines.append(_METADATA.sub("", line).rstrip())
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


def hlo_fingerprint(text: str) -> str:
    """sha256 of the normalized text (hex, 16 characters are plenty to tell programs apart)."""
    return hashlib.sha256(normalized_hlo(text).encode()).hexdigest()[:16]


def file_fingerprint(path: str | Path) -> str:
    return hlo_fingerprint(Path(path).read_text(errors="replace"))
