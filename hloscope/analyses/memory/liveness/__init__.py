"""hloscope's own liveness analysis of a scheduled HLO module, matching XLA's live-range dump.

XLA's buffer assignment writes `*-live-range.txt`: every logical buffer's live range over a
flattened schedule and the set live at the peak. This package computes the same from the HLO
text alone, in the same steps as XLA:

    program.py    the flattened schedule (HloLiveRange::FlattenSchedule)
    dataflow.py   the values each instruction holds (HloDataflowAnalysis, SSA form)
    phis.py       phi simplification (PhiGraph::Optimize)
    positions.py  positions and uses of each value (HloValue)
    inplace.py    in-place operand/output pairs (AliasInfo)
    aliasing.py   values that share a buffer (HloAliasAnalysis)
    ranges.py     live ranges, made disjoint within a buffer (HloLiveRange)
    sharing.py    outputs made in the buffer of an operand that dies there (HeapSimulator)
    gpu_hints.py  XLA:GPU's sharing hint (GpuAliasInfo), with gpu_emitter.py's fusion analysis
    peak.py       the peak moment, the live set at it, per memory space, and the timeline
    categories.py what each buffer is: parameter, optimizer state, activation, gradient, ...

The live peak is the sum of the buffers live at once, an output that takes the buffer of an
operand dying where it is made counted once with it (as XLA's buffer assignment places them). It
is not what XLA allocates: the allocation packs buffers into a heap with alignment and
fragmentation (see `hloscope memory`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from hloscope.analyses.memory.liveness.aliasing import UnionFind, alias_buffers
from hloscope.analyses.memory.liveness.dataflow import Dataflow
from hloscope.analyses.memory.liveness.positions import settle
from hloscope.analyses.memory.liveness.program import FlatProgram, flatten
from hloscope.analyses.memory.liveness.ranges import live_ranges
from hloscope.analyses.memory.liveness.sharing import Share, ValueAt, shared_buffers
from hloscope.analyses.memory.liveness.values import (
    Index,
    TreeIndexError,
    Value,
    shape_error,
    subtree,
    top_value,
)
from hloscope.errors import NotScheduledError
from hloscope.model.instruction import Instruction
from hloscope.model.module import HloModule


@dataclass(slots=True)
class Liveness:
    """The values of a program with their live ranges (inclusive logical times).

    `buffers` groups the values XLA's alias analysis puts in one buffer; `shares` lists the
    (operand, output) values the heap simulator places in one buffer where the operand dies;
    `together` the (earlier, later) values the buffer assigner puts at one offset of an
    argument's or output's allocation where their ranges meet (empty until `placed`);
    `allocations` groups all three: the values that occupy one piece of memory over time."""

    program: FlatProgram
    values: list[Value]
    ranges: dict[int, tuple[int, int]]
    buffers: UnionFind
    shares: list[Share]
    allocations: UnionFind
    value_at: ValueAt
    together: list[Share] = field(default_factory=list)
    _live: list[Value] | None = None

    def live_values(self) -> list[Value]:
        """Values with a live range, in id order (XLA's order of values)."""
        if self._live is None:
            self._live = [v for v in self.values if v.id in self.ranges]
        return self._live


def require_scheduled(module: HloModule) -> None:
    if not module.is_scheduled:
        raise NotScheduledError(
            f"{module.source}: module {module.name} is not scheduled (no is_scheduled=true), so "
            "its buffers' lifetimes are unknown; pass the after-optimizations dump "
            "(*after_optimizations.txt) rather than the before-optimizations one")


def analyze_liveness(module: HloModule, root: str | None = None) -> Liveness:
    """Live ranges of every logical buffer of `root` (default: the entry) and what it runs."""
    require_scheduled(module)
    program = flatten(module, root)
    dataflow = Dataflow(program).run()
    values, phis = settle(dataflow)

    def value_at(instruction: Instruction, index: Index) -> Value:
        try:
            return phis.resolve(top_value(subtree(dataflow.trees[instruction], index)))
        except TreeIndexError as error:
            raise shape_error(instruction, error) from None

    buffers = alias_buffers(program, values, value_at)
    ranges = live_ranges(program, values, buffers)
    shares = shared_buffers(program, values, ranges, buffers, value_at)
    return Liveness(program, values, ranges, buffers, shares, _joined(buffers, shares), value_at)


def placed(liveness: Liveness, outside_heap: frozenset[int], together: list[Share],
           backend: str = "") -> Liveness:
    """`liveness` as XLA's buffer assigner places it: the values in `outside_heap` went to an
    argument's or output's allocation before the heap simulation (so they take no heap
    buffer and give none), and each pair in `together` sits at one offset of one allocation
    where the first value's range ends and the second's begins (one piece of memory there)."""
    shares = shared_buffers(liveness.program, liveness.values, liveness.ranges,
                            liveness.buffers, liveness.value_at, outside_heap, backend)
    allocations = _joined(liveness.buffers, [*shares, *together])
    return replace(liveness, shares=shares, allocations=allocations, together=list(together))


def _joined(buffers: UnionFind, pairs: list[Share]) -> UnionFind:
    allocations = buffers.copy()
    for first, second in pairs:
        allocations.union(first, second)
    return allocations


__all__ = ["Liveness", "Value", "analyze_liveness", "placed", "require_scheduled"]
