"""What differs between two compiled programs, and what explains it (`hloscope compare A B`).

The headline figures of both sides (`headline.py`) with absolute and relative deltas, then the
explanations: instruction counts by opcode, FLOPs by scope, layer and phase, the buffers live at
each side's peak that appear, disappear or change, and where the peak moved. Buffers are
matched by what they are — the op_name of the JAX operation that made them and their shape
without layout — never by XLA's instruction numbers, which change from one compile to the next
(an op_name that is itself an instruction name, `broadcast.100`, is matched as `broadcast.*`;
so are FLOP scopes and loop-body layers).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from hloscope.analyses.gate.headline import Metric, headline
from hloscope.analyses.memory.analysis import BufferRow, MemoryResult
from hloscope.analyses.summary.overview import ModuleOverview, overview
from hloscope.dataframes import DataFrames
from hloscope.devices import Device
from hloscope.loader.program import Program

_LAYOUT = re.compile(r"\{[^{}]*\}$")
# an op_name that is only an XLA instruction name ("broadcast.100", "fusion.3.remat2"): XLA
# numbers instructions per compile, so such names are matched without their numbers
_INSTRUCTION_NAME = re.compile(
    r"(?P<base>[A-Za-z][\w-]*?)(?:\.(?:\d+|clone|remat\d*))+(?P<rest> \(.*\))?")


@dataclass(frozen=True, slots=True)
class MetricDelta:
    key: str
    label: str
    kind: str
    a: int | float | None
    b: int | float | None

    @property
    def delta(self) -> int | float | None:
        return None if self.a is None or self.b is None else self.b - self.a

    @property
    def relative(self) -> float | None:
        if self.delta is None or not self.a:
            return None
        return self.delta / self.a

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "label": self.label, "a": self.a, "b": self.b,
                "delta": self.delta, "relative": self.relative}


@dataclass(frozen=True, slots=True)
class KeyDelta:
    """One opcode, scope, layer or phase: its figure on each side."""

    key: str
    a: int
    b: int

    @property
    def delta(self) -> int:
        return self.b - self.a

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "a": self.a, "b": self.b, "delta": self.delta}


@dataclass(frozen=True, slots=True)
class BufferChange:
    """Buffers live at the peak made by one operation with one shape, on each side."""

    change: str  # "appears", "disappears" or "changes"
    op_name: str
    shape: str
    category: str
    count_a: int
    count_b: int
    bytes_a: int
    bytes_b: int

    @property
    def delta(self) -> int:
        return self.bytes_b - self.bytes_a

    def to_dict(self) -> dict[str, Any]:
        return {"change": self.change, "op_name": self.op_name, "shape": self.shape,
                "category": self.category, "count_a": self.count_a, "count_b": self.count_b,
                "bytes_a": self.bytes_a, "bytes_b": self.bytes_b, "delta": self.delta}


@dataclass(frozen=True, slots=True)
class PeakPlace:
    phase: str
    op_name: str
    instruction: str

    def to_dict(self) -> dict[str, str]:
        return {"phase": self.phase, "op_name": self.op_name, "instruction": self.instruction}


@dataclass(slots=True)
class CompareResult(DataFrames):
    a: str
    b: str
    metrics: list[MetricDelta]
    opcodes: list[KeyDelta]
    flops_by: dict[str, list[KeyDelta]]
    buffers: list[BufferChange]
    peak_a: PeakPlace | None
    peak_b: PeakPlace | None
    notes: list[str] = field(default_factory=list)

    @property
    def differs(self) -> bool:
        return bool(any(m.delta for m in self.metrics) or self.opcodes or self.buffers
                    or any(self.flops_by.values()) or self.peak_moved)

    @property
    def peak_moved(self) -> bool:
        """Whether the peak is at another operation (by phase and op_name, not instruction)."""
        a, b = self.peak_a, self.peak_b
        if a is None or b is None:
            return a is not b
        return (a.phase, stable_name(a.op_name)) != (b.phase, stable_name(b.op_name))

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "differs": self.differs,
                "metrics": [m.to_dict() for m in self.metrics],
                "opcodes": [d.to_dict() for d in self.opcodes],
                "flops_by": {by: [d.to_dict() for d in rows]
                             for by, rows in self.flops_by.items()},
                "buffers": [c.to_dict() for c in self.buffers],
                "peak_moved": self.peak_moved,
                "peak_a": self.peak_a.to_dict() if self.peak_a else None,
                "peak_b": self.peak_b.to_dict() if self.peak_b else None,
                "notes": list(self.notes)}


FLOP_BREAKDOWNS = ("phase", "layer", "scope")


def compare(a: Program, b: Program, device: Device | None = None,
            labels: tuple[str, str] | None = None) -> CompareResult:
    """The differences between `a` and `b` (B minus A), per device."""
    label_a, label_b = labels or (a.module.name, b.module.name)
    return compare_overviews(overview(a, label_a), overview(b, label_b), device)


def compare_overviews(a: ModuleOverview, b: ModuleOverview,
                      device: Device | None = None) -> CompareResult:
    return CompareResult(
        a=a.label, b=b.label, metrics=metric_deltas(headline(a, device), headline(b, device)),
        opcodes=_changed(a.inspect.op_counts, b.inspect.op_counts),
        flops_by={by: _changed(_flops(a, by), _flops(b, by)) for by in FLOP_BREAKDOWNS},
        buffers=buffer_changes(a.memory, b.memory),
        peak_a=_peak_place(a.memory), peak_b=_peak_place(b.memory),
        notes=[f"{item.label}: memory {item.memory_note}" for item in (a, b)
               if item.memory_note])


def metric_deltas(a: list[Metric], b: list[Metric]) -> list[MetricDelta]:
    return [MetricDelta(x.key, x.label, x.kind, x.value, y.value) for x, y in zip(a, b,
                                                                                    strict=True)]


def _flops(item: ModuleOverview, by: str) -> dict[str, int]:
    totals: dict[str, int] = {}
    for row in item.flops.rows(by):
        key = stable_name(row.key)
        totals[key] = totals.get(key, 0) + row.flops
    return totals


def _changed(a: dict[str, int], b: dict[str, int]) -> list[KeyDelta]:
    deltas = [KeyDelta(key, a.get(key, 0), b.get(key, 0)) for key in sorted(set(a) | set(b))]
    return sorted((d for d in deltas if d.delta), key=lambda d: (-abs(d.delta), d.key))


def buffer_changes(a: MemoryResult | None, b: MemoryResult | None) -> list[BufferChange]:
    if a is None or b is None:
        return []
    groups_a, groups_b = _groups(a.live_at_peak), _groups(b.live_at_peak)
    changes = []
    for key in set(groups_a) | set(groups_b):
        (count_a, bytes_a, category_a), (count_b, bytes_b, category_b) = (
            groups_a.get(key, (0, 0, "")), groups_b.get(key, (0, 0, "")))
        if (count_a, bytes_a) == (count_b, bytes_b):
            continue
        change = "appears" if not count_a else "disappears" if not count_b else "changes"
        changes.append(BufferChange(change, key[0], key[1], category_b or category_a,
                                    count_a, count_b, bytes_a, bytes_b))
    return sorted(changes, key=lambda c: (-abs(c.delta), c.op_name, c.shape))


def _groups(rows: list[BufferRow]) -> dict[tuple[str, str], tuple[int, int, str]]:
    groups: dict[tuple[str, str], tuple[int, int, str]] = {}
    for row in rows:
        key = (stable_name(row.op_name), layout_free(row.shape))
        count, total, _ = groups.get(key, (0, 0, row.category))
        groups[key] = (count + 1, total + row.bytes, row.category)
    return groups


def stable_name(op_name: str) -> str:
    """`broadcast.100` -> `broadcast.*`, `while.7 (loop body)` -> `while.* (loop body)`; a JAX
    op_name (`jit(f)/jvp(layer_0)/sub`) or a layer (`layer_0`) as it is."""
    match = _INSTRUCTION_NAME.fullmatch(op_name)
    return f"{match.group('base')}.*{match.group('rest') or ''}" if match else op_name


def layout_free(shape: str) -> str:
    """`f32[16,4,512,512]{2,3,1,0:T(8,128)}` -> `f32[16,4,512,512]`."""
    return _LAYOUT.sub("", shape)


def _peak_place(memory: MemoryResult | None) -> PeakPlace | None:
    if memory is None:
        return None
    return PeakPlace(memory.peak_phase, memory.peak_op_name, memory.peak_instruction)
