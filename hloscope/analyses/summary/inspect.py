"""`inspect`: what a module is — its size, its op mix, and its parameter and output bytes."""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field, replace

from hloscope.analyses.arguments import pytree_path
from hloscope.dataframes import DataFrames
from hloscope.model.module import HloModule
from hloscope.model.opcodes import OpCategory, category_of, is_known
from hloscope.model.shape import Shape


@dataclass(frozen=True, slots=True)
class BufferSummary:
    """An entry parameter or an output leaf, with its size."""

    name: str
    index: str
    shape: str
    bytes: int
    padded_bytes: int
    memory_space: int
    path: str = ""  # an entry parameter's pytree path (`params['layers']['mlp']['w1']`)
    sharding: str = ""  # an entry parameter's sharding as the module states it


@dataclass(frozen=True, slots=True)
class CostTotals:
    """FLOPs and recomputation of one device's program, loop trip counts applied."""

    total_flops: int
    total_transcendentals: int
    total_bytes_accessed: int
    remat_instructions: int
    xla_remat_instructions: int
    recompute_flops: int
    forward_flops: int


@dataclass(slots=True)
class InspectResult(DataFrames):
    module_name: str
    source: str
    is_scheduled: bool
    entry_computation: str
    computation_count: int
    instruction_count: int
    num_partitions: int
    replica_count: int
    op_counts: dict[str, int]
    category_counts: dict[str, int]
    parameters: list[BufferSummary]
    outputs: list[BufferSummary]
    unknown_opcodes: list[str] = field(default_factory=list)
    other_modules: list[str] = field(default_factory=list)
    chosen_because: str = ""
    costs: CostTotals | None = None
    peak_bytes: int | None = None
    peak_note: str = ""

    @property
    def parameter_bytes(self) -> int:
        return sum(p.bytes for p in self.parameters)

    @property
    def output_bytes(self) -> int:
        return sum(o.bytes for o in self.outputs)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["parameter_bytes"] = self.parameter_bytes
        data["output_bytes"] = self.output_bytes
        costs = data.pop("costs")
        if costs is not None:
            data.update(costs)
        return data


def inspect(module: HloModule, costs: bool = True) -> InspectResult:
    """Counts, parameters and outputs; with `costs`, also the FLOP and remat totals and the
    device live peak (n/a, with the reason, for an unscheduled module)."""
    op_counts: Counter[str] = Counter()
    for computation in module.computations.values():
        op_counts.update(instruction.opcode for instruction in computation.instructions)
    categories: Counter[str] = Counter()
    for opcode, count in op_counts.items():
        categories[category_of(opcode).value] += count
    return InspectResult(
        module_name=module.name,
        source=module.source,
        is_scheduled=module.is_scheduled,
        entry_computation=module.entry_name,
        computation_count=len(module.computations),
        instruction_count=sum(op_counts.values()),
        num_partitions=module.num_partitions,
        replica_count=module.replica_count,
        op_counts=dict(op_counts.most_common()),
        category_counts={c.value: categories[c.value] for c in OpCategory if categories[c.value]},
        parameters=_parameters(module),
        outputs=_outputs(module),
        unknown_opcodes=sorted(op for op in op_counts if not is_known(op)),
        other_modules=list(module.alternatives), chosen_because=module.chosen_because,
        costs=cost_totals(module) if costs else None,
        **(_peak(module) if costs else {}),
    )


def _peak(module: HloModule) -> dict:
    from hloscope.analyses.memory.analysis import live_peak_bytes

    peak, note = live_peak_bytes(module)
    return {"peak_bytes": peak, "peak_note": note}


def cost_totals(module: HloModule) -> CostTotals:
    from hloscope.analyses.cost.flops import cost_analysis, costed_charges, flops
    from hloscope.analyses.cost.remat import remat

    analysis = cost_analysis(module)
    charged = costed_charges(analysis)
    total = flops(analysis, charged=charged).total
    recomputed = remat(analysis, charged=charged)
    return CostTotals(
        total_flops=total.flops,
        total_transcendentals=total.transcendentals,
        total_bytes_accessed=total.bytes_accessed,
        remat_instructions=recomputed.remat_instructions,
        xla_remat_instructions=recomputed.xla_remat_instructions,
        recompute_flops=recomputed.recompute_flops,
        forward_flops=recomputed.forward_flops,
    )


def _parameters(module: HloModule) -> list[BufferSummary]:
    found = []
    for parameter in module.entry.parameters:
        path, sharding = pytree_path(parameter) or "", parameter.sharding or ""
        for index, leaf in parameter.shape.leaves():
            found.append(replace(_summary(parameter.name, index, leaf), path=path,
                                 sharding=sharding))
    return found


def _outputs(module: HloModule) -> list[BufferSummary]:
    root = module.entry.root
    return [_summary(root.name, index, leaf) for index, leaf in root.shape.leaves()]


def _summary(name: str, index: tuple[int, ...], shape: Shape) -> BufferSummary:
    return BufferSummary(
        name=name,
        index="{" + ",".join(map(str, index)) + "}",
        shape=str(shape),
        bytes=shape.byte_size,
        padded_bytes=shape.padded_byte_size,
        memory_space=shape.memory_space,
    )
