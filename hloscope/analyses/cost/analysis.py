"""Costs of every instruction and computation of a module, with loops multiplied out.

`CostAnalysis(module)` costs instructions on demand and caches per computation. An instruction's
cost is inclusive: a fusion, call, async start, loop or conditional costs what it runs, as in
XLA's HloCostAnalysis, with these differences, each switchable by `CostOptions`:

- a while loop costs body x trip count + condition x (trip count + 1) (see loops.py);
  XLA counts body + condition once. `trip_counts=False` does the same.
- custom-calls are estimated (see custom_calls.py), and recognised Pallas kernels (splash
  attention) costed by their closed form (see kernels.py); `xla_custom_calls=True` counts them
  as XLA does, -1 FLOP and -1 byte each.

`CostOptions.like_xla()` sets both, and then totals reproduce XLA's cost analysis.

A conditional costs, for each property separately, its most expensive branch (XLA's rule): the
FLOPs may come from one branch and the bytes from another. `branch_choice` says which.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from hloscope.analyses.cost.custom_calls import XLA_UNKNOWN, custom_call_cost
from hloscope.analyses.cost.fusion import fusion_bytes
from hloscope.analyses.cost.graph import ComputationGraph
from hloscope.analyses.cost.kernels import KernelCost, kernel_cost
from hloscope.analyses.cost.layer_loops import LayerLoops
from hloscope.analyses.cost.loops import TripCount, trip_count
from hloscope.analyses.cost.rules import NO_MEMORY, Site, rule_for
from hloscope.analyses.cost.vector import ZERO, Cost, elementwise_max, total
from hloscope.errors import InputError
from hloscope.gc_pause import paused_gc
from hloscope.model.instruction import Instruction
from hloscope.model.module import HloModule
from hloscope.model.opcodes import is_known


@dataclass(frozen=True, slots=True)
class CostOptions:
    trip_counts: bool = True
    xla_custom_calls: bool = False
    tile_padding: bool = True  # tiled (TPU) layouts count whole tiles, as libtpu does

    @classmethod
    def like_xla(cls) -> CostOptions:
        """XLA's HloCostAnalysis with its default shape sizes: loop bodies once, custom-calls
        unknown (-1), no tile padding."""
        return cls(trip_counts=False, xla_custom_calls=True, tile_padding=False)


@dataclass(frozen=True, slots=True)
class Unattributed:
    """A custom-call whose FLOPs hloscope cannot know."""

    computation: str
    instruction: str
    target: str


@dataclass(frozen=True, slots=True)
class ClosedForm:
    """A custom-call costed by its kernel's closed form (one launch; loops not applied)."""

    computation: str
    instruction: str
    kernel: KernelCost


@dataclass(frozen=True, slots=True)
class UnknownLoop:
    """A while loop whose trip count is neither annotated nor inferable (counted once)."""

    computation: str
    instruction: str


@dataclass(slots=True)
class ComputationCosts:
    costs: list[Cost]
    total: Cost


@dataclass(slots=True)
class CostAnalysis:
    module: HloModule
    options: CostOptions = field(default_factory=CostOptions)
    unattributed: list[Unattributed] = field(default_factory=list)
    closed_form: list[ClosedForm] = field(default_factory=list)
    unknown_loops: list[UnknownLoop] = field(default_factory=list)
    unknown_opcodes: set[str] = field(default_factory=set)
    _graphs: dict[str, ComputationGraph] = field(default_factory=dict)
    _costs: dict[str, ComputationCosts] = field(default_factory=dict)
    _trips: dict[tuple[str, str], TripCount] = field(default_factory=dict)
    _active: set[str] = field(default_factory=set)
    _layer_loops: LayerLoops | None = None

    # --- public --------------------------------------------------------------------------
    @property
    def total(self) -> Cost:
        return self.computation_costs(self.module.entry_name).total

    def layer_loops(self) -> LayerLoops:
        """The module's layer loops, found once per analysis, on its computation graphs."""
        if self._layer_loops is None:
            self._layer_loops = LayerLoops(self.module, graphs=self._graphs)
        return self._layer_loops

    def graph(self, name: str) -> ComputationGraph:
        graph = self._graphs.get(name)
        if graph is None:
            computation = self.module.computations.get(name)
            if computation is None:
                raise InputError(f"{self.module.source}: module {self.module.name} calls "
                                 f"computation {name!r}, which it does not define")
            graph = self._graphs[name] = ComputationGraph(computation)
        return graph

    def computation_costs(self, name: str) -> ComputationCosts:
        found = self._costs.get(name)
        if found is None:
            found = self._costs[name] = self._cost_computation(name)
        return found

    def computation_total(self, name: str) -> Cost:
        return self.computation_costs(name).total

    def trip_count(self, computation: str, loop: Instruction) -> TripCount:
        key = (computation, loop.name)
        found = self._trips.get(key)
        if found is None:
            found = trip_count(loop, self.graph(computation), self._graph_or_none)
            self._trips[key] = found
            if not found.known:
                self.unknown_loops.append(UnknownLoop(computation, loop.name))
        return found

    def trip_counts(self) -> dict[tuple[str, str], TripCount]:
        """(computation, while instruction) -> trip count, for every loop costed so far."""
        return dict(self._trips)

    def loop_factors(self, computation: str, loop: Instruction) -> tuple[int, int]:
        """How many times the body and the condition of a while loop are counted."""
        if not self.options.trip_counts:
            return 1, 1
        count = self.trip_count(computation, loop).count
        return count, count + 1

    def branch_choice(self, conditional: Instruction) -> tuple[list[str], list[int]]:
        """(branch computations, index of the branch supplying each cost property)."""
        branches = branch_computations(conditional)
        if not branches:
            raise conditional.error("conditional without branch computations",
                                    conditional.operands_end)
        costs = [self.computation_total(b).as_tuple() for b in branches]
        chosen = []
        for prop in range(4):
            best = max(c[prop] for c in costs)
            chosen.append(next(i for i, c in enumerate(costs) if c[prop] == best))
        return branches, chosen

    def analyze_all(self) -> None:
        """Costs every computation, reachable or not (per-instruction tables, benchmarks)."""
        with paused_gc():
            for name in self.module.computations:
                self.computation_costs(name)

    # --- computations --------------------------------------------------------------------
    def _graph_or_none(self, name: str) -> ComputationGraph | None:
        return self.graph(name) if name in self.module.computations else None

    def _cost_computation(self, name: str) -> ComputationCosts:
        if name in self._active:
            raise InputError(f"{self.module.source}: computation {name} calls itself")
        self._active.add(name)
        graph = self.graph(name)
        costs = [self._instruction(graph, i) for i in graph.computation.instructions]
        self._active.discard(name)
        return ComputationCosts(costs, total(costs))

    def _instruction(self, graph: ComputationGraph, instruction: Instruction) -> Cost:
        opcode = instruction.opcode
        if opcode in NO_MEMORY:
            return ZERO
        special = _SPECIAL.get(opcode)
        if special is not None:
            return special(self, graph, instruction)
        if not is_known(opcode):
            self.unknown_opcodes.add(opcode)
        try:
            return rule_for(opcode)(self._site(graph, instruction))
        except (IndexError, KeyError, ZeroDivisionError):
            raise instruction.error(f"cannot cost this {opcode}: its operands, shapes or "
                                    "attributes do not fit it", instruction.operands_start) \
                from None

    def _site(self, graph: ComputationGraph, instruction: Instruction) -> Site:
        return Site(instruction, graph.operands(instruction), self.computation_total,
                    self.options.tile_padding)

    # --- instructions that run other computations ----------------------------------------
    def _fusion(self, graph: ComputationGraph, fusion: Instruction) -> Cost:
        fused = self.graph(fusion.required_called_computation("calls"))
        if fusion.fusion_kind == "kCustom":
            for inner in fused.computation.instructions:
                if inner.opcode in ("gather", "scatter"):
                    return rule_for(inner.opcode)(self._site(fused, inner))
        inner_cost = self.computation_total(fused.computation.name)
        return inner_cost.with_bytes(fusion_bytes(fusion.shape, fused, self.graph,
                                                  self.options.tile_padding))

    def _while(self, graph: ComputationGraph, loop: Instruction) -> Cost:
        body_times, condition_times = self.loop_factors(graph.computation.name, loop)
        body = self.computation_total(loop.required_called_computation("body")).scaled(body_times)
        condition = self.computation_total(loop.required_called_computation("condition"))
        return body + condition.scaled(condition_times)

    def _call(self, graph: ComputationGraph, call: Instruction) -> Cost:
        return self.computation_total(call.required_called_computation("to_apply"))

    def _async_start(self, graph: ComputationGraph, start: Instruction) -> Cost:
        return self.computation_total(start.required_called_computation("calls"))

    def _scan(self, graph: ComputationGraph, scan: Instruction) -> Cost:
        """The FLOPs and transcendentals of its to_apply once per step (the scanned
        dimensions of its first input); under XLA's conventions, as its HloCostAnalysis::HandleScan
        charges them, times the element count of operand 1 (the first init, or second input)
        instead. Bytes: its operands and result."""
        combiner = self.computation_total(scan.required_called_computation("to_apply"))
        own = rule_for("scan")(self._site(graph, scan))
        times = _scan_steps(graph, scan) if self.options.trip_counts else \
            _operand_elements(graph, scan, 1)
        return Cost(combiner.flops * times, combiner.transcendentals * times,
                    own.bytes_accessed, own.collective_bytes)

    def _conditional(self, graph: ComputationGraph, conditional: Instruction) -> Cost:
        branches = branch_computations(conditional)
        return elementwise_max([self.computation_total(b) for b in branches]) if branches \
            else ZERO

    def _custom_call(self, graph: ComputationGraph, call: Instruction) -> Cost:
        if self.options.xla_custom_calls:
            return XLA_UNKNOWN
        site = self._site(graph, call)
        kernel = kernel_cost(site)
        if kernel is not None:
            self.closed_form.append(ClosedForm(graph.computation.name, call.name, kernel))
            return kernel.cost
        cost, attributed = custom_call_cost(site)
        if not attributed:
            self.unattributed.append(Unattributed(graph.computation.name, call.name,
                                                  call.custom_call_target or ""))
        return cost



def _operand_elements(graph: ComputationGraph, instruction: Instruction, index: int) -> int:
    shapes = graph.operand_shapes(instruction)
    if index >= len(shapes) or not shapes[index].is_array:
        return 1
    return shapes[index].element_count


def _scan_steps(graph: ComputationGraph, scan: Instruction) -> int:
    shapes = graph.operand_shapes(scan)
    if not shapes or not shapes[0].is_array:
        return 1
    dimensions = shapes[0].dimensions
    return math.prod(dimensions[d] for d in scan.dimensions or () if 0 <= d < len(dimensions))


def branch_computations(conditional: Instruction) -> list[str]:
    """Branch 0, 1, ...; the predicated form is (true_computation, false_computation)."""
    listed = conditional.raw_attribute("branch_computations")
    if listed is not None:
        return list(conditional.called_computations)
    return [name for key in ("true_computation", "false_computation")
            if (name := conditional.called_computation(key)) is not None]


_SPECIAL = {
    "fusion": CostAnalysis._fusion,
    "while": CostAnalysis._while,
    "call": CostAnalysis._call,
    "async-start": CostAnalysis._async_start,
    "conditional": CostAnalysis._conditional,
    "scan": CostAnalysis._scan,
    "custom-call": CostAnalysis._custom_call,
}
