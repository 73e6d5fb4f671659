"""`flops`: a module's FLOPs, transcendentals and bytes, by opcode, scope, layer and phase.

Totals come from hloscope.analyses.cost (XLA's HloCostAnalysis rules, loops multiplied by their
trip counts); breakdowns from hloscope.analyses.cost.attribution (each FLOP charged to the
instruction that does it). Every breakdown's rows add up to the totals, column by column.

Scopes are shown below the prefix every costed op shares (typically the jitted function's name);
`scope_prefix` names it. Instructions that cost nothing (parameters, tuples, ...) are left out.

Layers: an op whose name stack names a numbered layer (`layer_3`) is charged to it; an op inside a
layer loop (the scan over stacked layers, found by hloscope.analyses.cost.layer_loops) is split
evenly into `layer_0` .. `layer_{L-1}`, as if the layers were unrolled; any other op inside a
while loop is charged to the loop. The rest is "(outside layers)".
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

from hloscope.analyses.cost import Cost, CostAnalysis, CostOptions
from hloscope.analyses.cost.attribution import Charge, charges, split
from hloscope.analyses.cost.phases import DEFAULT_SCOPE_DEPTH, PHASE_ORDER, layer_number, scope_path
from hloscope.analyses.cost.vector import ZERO
from hloscope.dataframes import DataFrames
from hloscope.gc_pause import paused_gc
from hloscope.model.module import HloModule

BREAKDOWNS = ("opcode", "scope", "layer", "phase")
OUTSIDE_LAYERS = "(outside layers)"


@dataclass(slots=True)
class Row:
    """One group of a breakdown; `instructions` counts the distinct instructions charged."""

    key: str
    flops: int = 0
    transcendentals: int = 0
    bytes_accessed: int = 0
    collective_bytes: int = 0
    instructions: int = 0
    iterations: int = 1  # layers: loop iterations the row's figures add up (1 elsewhere)

    @property
    def flops_per_iteration(self) -> int:
        return self.flops // max(self.iterations, 1)

    def to_dict(self) -> dict:
        return {"key": self.key, "flops": self.flops, "transcendentals": self.transcendentals,
                "bytes_accessed": self.bytes_accessed,
                "collective_bytes": self.collective_bytes, "instructions": self.instructions,
                "iterations": self.iterations,
                "flops_per_iteration": self.flops_per_iteration}


@dataclass(frozen=True, slots=True)
class LoopInfo:
    computation: str
    instruction: str
    trip_count: int
    source: str  # backend_config, inferred or unknown


@dataclass(frozen=True, slots=True)
class CustomCallInfo:
    target: str
    count: int
    instructions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ClosedFormInfo:
    """Launches of one Pallas kernel costed by its closed form (see cost/kernels.py).

    `flops_per_launch` is one launch of each listed instruction (loop trip counts not applied;
    the totals and breakdowns apply them)."""

    kernel: str
    phase: str
    count: int
    instructions: tuple[str, ...]
    flops_per_launch: tuple[int, ...]
    matmuls_per_block_pair: int
    visited_block_pairs: int
    block_pairs: int
    basis: str


@dataclass(slots=True)
class FlopsResult(DataFrames):
    module_name: str
    source: str
    partitions: int  # SPMD partitions x replicas: the figures are one device's
    total: Cost
    trip_counts_applied: bool
    scope_depth: int
    scope_prefix: str
    breakdowns: dict[str, list[Row]]
    loops: list[LoopInfo] = field(default_factory=list)
    unattributed: list[CustomCallInfo] = field(default_factory=list)
    closed_form: list[ClosedFormInfo] = field(default_factory=list)
    closed_form_flops: int = 0  # of `total.flops`, loop trip counts applied
    unknown_opcodes: list[str] = field(default_factory=list)

    @property
    def unknown_loops(self) -> list[LoopInfo]:
        return [loop for loop in self.loops if loop.source == "unknown"]

    def rows(self, by: str) -> list[Row]:
        return self.breakdowns[by]

    def to_dict(self) -> dict:
        return {
            "module": self.module_name,
            "source": self.source,
            "partitions": self.partitions,
            "total_flops": self.total.flops,
            "total_transcendentals": self.total.transcendentals,
            "total_bytes_accessed": self.total.bytes_accessed,
            "total_collective_bytes": self.total.collective_bytes,
            "trip_counts_applied": self.trip_counts_applied,
            "scope_depth": self.scope_depth,
            "scope_prefix": self.scope_prefix,
            **{f"by_{by}": [row.to_dict() for row in rows]
               for by, rows in self.breakdowns.items()},
            "loops": [asdict(loop) for loop in self.loops],
            "unattributed_custom_calls": [asdict(call) for call in self.unattributed],
            "closed_form_custom_calls": [asdict(call) for call in self.closed_form],
            "closed_form_flops": self.closed_form_flops,
            "unknown_opcodes": self.unknown_opcodes,
        }


def flops(module_or_analysis: HloModule | CostAnalysis,
          scope_depth: int = DEFAULT_SCOPE_DEPTH, options: CostOptions | None = None,
          charged: list[Charge] | None = None) -> FlopsResult:
    """Analyses a module (or reuses a CostAnalysis and its charges) into totals and the four
    breakdowns. `options` apply when a module is given (CostOptions.like_xla() reproduces XLA's
    totals)."""
    with paused_gc():
        analysis = cost_analysis(module_or_analysis, options)
        if charged is None:
            charged = costed_charges(analysis)
        return _result(analysis, charged, scope_depth)


def _result(analysis: CostAnalysis, charged: list[Charge], scope_depth: int) -> FlopsResult:
    prefix = common_scope_prefix(charged)
    module = analysis.module
    return FlopsResult(
        module_name=module.name,
        source=module.source,
        partitions=module.num_partitions * module.replica_count,
        total=analysis.total,
        trip_counts_applied=analysis.options.trip_counts,
        scope_depth=scope_depth,
        scope_prefix="/".join(prefix),
        breakdowns=breakdowns(charged, scope_depth, prefix,
                              split_layers=analysis.options.trip_counts),
        loops=_loops(analysis),
        unattributed=_custom_calls(analysis),
        closed_form=closed_form_calls(analysis),
        closed_form_flops=closed_form_flops(analysis, charged),
        unknown_opcodes=sorted(analysis.unknown_opcodes),
    )


def cost_analysis(module_or_analysis: HloModule | CostAnalysis,
                  options: CostOptions | None = None) -> CostAnalysis:
    if isinstance(module_or_analysis, CostAnalysis):
        return module_or_analysis
    return CostAnalysis(module_or_analysis, options or CostOptions())


def costed_charges(analysis: CostAnalysis) -> list[Charge]:
    """The charges of a module that cost something (parameters, tuples, ... are left out)."""
    return [c for c in charges(analysis) if c.cost != ZERO]


def breakdowns(charged: list[Charge], scope_depth: int, prefix: tuple[str, ...] = (),
               split_layers: bool = True) -> dict[str, list[Row]]:
    scopes: dict[str, str] = {}

    def scope_of(charge: Charge) -> str:
        found = scopes.get(charge.op_name)
        if found is None:
            found = scopes[charge.op_name] = scope_key(charge.op_name, scope_depth, prefix)
        return found

    return {
        "opcode": _sorted_by_flops(group(charged, lambda c: c.opcode)),
        "scope": _sorted_by_flops(group(charged, scope_of)),
        "layer": layer_rows(charged, split_layers),
        "phase": _phase_rows(charged),
    }


def scope_key(op_name: str, depth: int, prefix: tuple[str, ...] = ()) -> str:
    """The first `depth` components of the op_name's scope below `prefix`."""
    path = scope_path(op_name)
    if prefix and path[: len(prefix)] == prefix and len(path) > len(prefix):
        path = path[len(prefix):]
    return "/".join(path[: max(depth, 1)])


def common_scope_prefix(charged: list[Charge]) -> tuple[str, ...]:
    """The scope components every named charge shares (typically the jitted function's name)."""
    prefix: tuple[str, ...] | None = None
    for op_name in {c.op_name for c in charged if c.op_name}:
        path = scope_path(op_name)
        if prefix is None:
            prefix = path
            continue
        common = 0
        while common < min(len(prefix), len(path)) and prefix[common] == path[common]:
            common += 1
        prefix = prefix[:common]
        if not prefix:
            break
    return prefix or ()


def group(charged: Iterable[Charge], key_of: Callable[[Charge], str]) -> dict[str, Row]:
    sums: dict[str, list[int]] = {}
    seen: dict[str, set[int]] = {}
    for charge in charged:
        key = key_of(charge)
        entry = sums.get(key)
        if entry is None:
            entry = sums[key] = [0, 0, 0, 0]
            seen[key] = set()
        cost = charge.cost
        entry[0] += cost.flops
        entry[1] += cost.transcendentals
        entry[2] += cost.bytes_accessed
        entry[3] += cost.collective_bytes
        seen[key].add(id(charge.instruction))
    return {key: Row(key, entry[0], entry[1], entry[2], entry[3], instructions=len(seen[key]))
            for key, entry in sums.items()}


def _sorted_by_flops(rows: dict[str, Row]) -> list[Row]:
    return sorted(rows.values(), key=lambda r: (-r.flops, -r.bytes_accessed, r.key))


def layer_key(charge: Charge) -> str:
    layer = charge.layer
    if layer is not None:
        return layer
    if charge.loop is not None:
        return f"{charge.loop.instruction} (loop body)"
    return OUTSIDE_LAYERS


def layer_rows(charged: list[Charge], split_layers: bool = True) -> list[Row]:
    """Named layers in numeric order, then loops (figures over all iterations), then the rest.

    A charge inside a layer loop (hloscope.analyses.cost.layer_loops) serves every layer alike
    (each iteration of a scan does the same work), so with `split_layers` its cost is split
    evenly into `layer_0` .. `layer_{L-1}` (L: the layer loops' trip counts multiplied): the
    scanned layers read like unrolled ones. Without it (trip counts not applied, so a body is
    counted once) the layer loop stays one row."""
    per_layer = [c for c in charged if split_layers and c.layers and c.layer is None]
    rows = group((c for c in charged if not (split_layers and c.layers and c.layer is None)),
                 layer_key)
    _add_layer_shares(rows, per_layer)
    iterations = {layer_key(c): c.loop.iterations for c in charged
                  if c.loop is not None and c.layer is None
                  and not (split_layers and c.layers)}
    for key, count in iterations.items():
        rows[key].iterations = count
    named = sorted((r for r in rows.values() if r.key not in iterations
                    and r.key != OUTSIDE_LAYERS), key=lambda r: (layer_number(r.key), r.key))
    loops = sorted((rows[k] for k in iterations), key=lambda r: r.key)
    outside = [rows[OUTSIDE_LAYERS]] if OUTSIDE_LAYERS in rows else []
    return named + loops + outside


def _add_layer_shares(rows: dict[str, Row], charged: list[Charge]) -> None:
    """Each charge's cost split evenly over its layers, added to rows `layer_0` ... (largest
    remainders first, so the shares add up to the cost exactly)."""
    seen: dict[str, set[int]] = {}
    model_layers = max((c.layers for c in charged), default=0)
    for charge in charged:
        # an outer loop of a nested scan runs groups of layers: its work is every layer's
        cost = charge.cost
        layers = model_layers if model_layers % charge.layers == 0 else charge.layers
        parts = [split(value, [1] * layers) for value in
                 (cost.flops, cost.transcendentals, cost.bytes_accessed, cost.collective_bytes)]
        for index in range(layers):
            key = f"layer_{index}"
            row = rows.get(key)
            if row is None:
                row = rows[key] = Row(key)
            row.flops += parts[0][index]
            row.transcendentals += parts[1][index]
            row.bytes_accessed += parts[2][index]
            row.collective_bytes += parts[3][index]
            seen.setdefault(key, set()).add(id(charge.instruction))
    for key, instructions in seen.items():
        rows[key].instructions += len(instructions)


def _phase_rows(charged: list[Charge]) -> list[Row]:
    rows = group(charged, lambda c: c.phase.value)
    return [rows[p.value] for p in PHASE_ORDER if p.value in rows]


def _loops(analysis: CostAnalysis) -> list[LoopInfo]:
    found = []
    for (computation, name), trip in analysis.trip_counts().items():
        found.append(LoopInfo(computation, name, trip.count, trip.source))
    return found


def _custom_calls(analysis: CostAnalysis) -> list[CustomCallInfo]:
    by_target: dict[str, list[str]] = {}
    for call in analysis.unattributed:
        by_target.setdefault(call.target, []).append(call.instruction)
    return [CustomCallInfo(target, len(names), tuple(names))
            for target, names in sorted(by_target.items(), key=lambda kv: -len(kv[1]))]


def closed_form_calls(analysis: CostAnalysis) -> list[ClosedFormInfo]:
    """The closed-form custom-calls, one entry per kernel and block geometry."""
    by_kernel: dict[tuple, list] = {}
    for call in analysis.closed_form:
        k = call.kernel
        key = (k.kernel, k.phase, k.matmuls, k.visited_blocks, k.total_blocks, k.basis)
        by_kernel.setdefault(key, []).append(call)
    return [ClosedFormInfo(kernel, phase, len(calls), tuple(c.instruction for c in calls),
                           tuple(c.kernel.cost.flops for c in calls), matmuls, visited, total,
                           basis)
            for (kernel, phase, matmuls, visited, total, basis), calls in by_kernel.items()]


def closed_form_flops(analysis: CostAnalysis, charged: list[Charge]) -> int:
    """The FLOPs of the closed-form custom-calls, as the totals count them (loops applied)."""
    costed = {(call.computation, call.instruction) for call in analysis.closed_form}
    return sum(c.cost.flops for c in charged if (c.computation, c.instruction.name) in costed)
