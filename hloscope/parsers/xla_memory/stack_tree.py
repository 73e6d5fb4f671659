"""The `Stack trace breakdown for peak usage` tree of a live-range dump (xla/hlo/utils/
hlo_stack_trace.cc, XLA 0.10 era).

    Stack trace breakdown for peak usage: 27 108 624 bytes
      main.97 (100.0%, total: 27 108 624 bytes, current: 0 bytes, remaining: 27 108 624 bytes)
        ├── state (3.3%, total: 887 808 bytes, current: 0 bytes, remaining: 21 859 600 bytes)
        │   ├── master (1.1%, total: 295 936 bytes, ...)
        └── jit(train_step)/optimizer/add (0.0%, total: 4 bytes, current: 4 bytes, ...)

Each value live at the peak is inserted along its path: the computations calling its
instruction (one path per call site, bytes split evenly between them), then its op_name
(`params['a/b'].c` split into `params`, `a`, `b`, `c`; otherwise the whole op_name or, without
one, the instruction name) with `{index}` appended for tuple elements. `current` is what ends at
a node, `total` includes the children; siblings are printed by total, then name. Numbers carry a
space every three digits. Top-level lines are indented 4 spaces; below them every level is a
4-character group (`│   ` or `    `) ending in `├── ` or `└── `.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from hloscope.model.xla_memory import StackNode
from hloscope.parsers.xla_memory.reading import error_at, spaced_int

HEADER = "  Stack trace breakdown for peak usage: "
_NUMBER = r"-?\d{1,3}(?: \d{3})*"
_NODE = re.compile(
    rf"^  (?P<lead>(?:[│ ]   )*)(?P<connector>├── |└── |  )(?P<name>.+) \((?P<percent>[\d.]+)%, "
    rf"total: (?P<total>{_NUMBER}) bytes, current: (?P<current>{_NUMBER}) bytes, "
    rf"remaining: (?P<remaining>{_NUMBER}) bytes\)$")


@dataclass
class _Draft:
    """A node while its children are still being read."""

    name: str
    percent: float
    total: int
    current: int
    remaining: int
    line: int
    children: list[_Draft] = field(default_factory=list)

    def freeze(self) -> StackNode:
        return StackNode(self.name, self.percent, self.total, self.current, self.remaining,
                         tuple(child.freeze() for child in self.children), self.line)


def parse_header(line: str, number: int, source: str) -> int:
    """The total of `  Stack trace breakdown for peak usage: N bytes` (1-based line `number`)."""
    text = line[len(HEADER):]
    if not text.endswith(" bytes"):
        raise error_at("expected `N bytes`", source, number, line, len(HEADER) + 1)
    try:
        return spaced_int(text[: -len(" bytes")])
    except ValueError:
        raise error_at("expected a byte count (digits, maybe grouped by spaces)", source, number,
                       line, len(HEADER) + 1) from None


def parse_tree(lines: Sequence[str], start: int, source: str,
               ) -> tuple[tuple[StackNode, ...], int]:
    """The nodes from 0-based `lines[start]` to the first line that is not a node."""
    roots: list[_Draft] = []
    path: list[_Draft] = []
    number = start
    while number < len(lines) and lines[number].startswith("  ") and lines[number].strip():
        node, depth = _node(lines[number], number + 1, source)
        if depth > len(path):
            line = lines[number]
            raise error_at(f"a node nested {depth} levels deep under a node at level "
                           f"{len(path) - 1}", source, number + 1, line,
                           len(line) - len(line.lstrip(" │")) + 1)
        del path[depth:]
        (path[-1].children if path else roots).append(node)
        path.append(node)
        number += 1
    return tuple(root.freeze() for root in roots), number


def _node(line: str, number: int, source: str) -> tuple[_Draft, int]:
    match = _NODE.match(line)
    if not match:
        raise error_at("expected `name (P%, total: N bytes, current: N bytes, remaining: N "
                       "bytes)`", source, number, line, len(line) - len(line.lstrip()) + 1)
    top_level = match["connector"] == "  "
    if top_level == bool(match["lead"]):
        raise error_at("a tree connector (├── or └──) is missing or misplaced", source, number,
                       line, 3)
    depth = 0 if top_level else len(match["lead"]) // 4
    draft = _Draft(match["name"], float(match["percent"]), spaced_int(match["total"]),
                   spaced_int(match["current"]), spaced_int(match["remaining"]), number)
    return draft, depth
