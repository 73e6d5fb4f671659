"""`remat`: what is recomputed, by whom, and what it costs.

Two kinds of recomputation are counted separately:

- JAX's (`jax.checkpoint` / `remat`): instructions whose op_name contains
  `/rematted_computation/` -- JAX's name for the forward ops it replays in the backward pass;
- XLA's rematerialization pass: instructions it cloned, named with a `.remat` suffix
  (`fusion.3.remat`, `copy.remat2`, `fusion.3.remat.1`, and the `.remat_compressed` /
  `.remat_uncompressed` copies of its compression strategy).

Counts are of instructions as written, in every computation including fused ones, leaving out
those that do no work (parameter, constant, tuple, get-tuple-element, bitcast); "fusions"
counts the fusion instructions whose fused computation holds a JAX-recomputed instruction.
FLOPs and bytes are what those instructions execute, with loop trip counts applied: for JAX's,
the `recompute` phase of the flops analysis; for XLA's, the work its clones *add*: per original
instruction (a clone's name without its suffix; HLO names are unique in a module), every copy
that runs beyond the costliest one. A clone whose original is gone took over all its uses and
moved the work rather than repeating it, so it adds nothing (libtpu does this to the forward
matmuls of programs far over HBM: the clone runs once, where the original would have).
recompute_overhead = recompute FLOPs / forward FLOPs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from hloscope.analyses.cost import CostAnalysis
from hloscope.analyses.cost.attribution import Charge
from hloscope.analyses.cost.flops import (
    DEFAULT_SCOPE_DEPTH,
    Row,
    common_scope_prefix,
    cost_analysis,
    costed_charges,
    group,
    layer_rows,
    scope_key,
)
from hloscope.analyses.cost.phases import Phase
from hloscope.dataframes import DataFrames
from hloscope.gc_pause import paused_gc
from hloscope.model.module import HloModule

JAX_MARKER = "/rematted_computation/"
XLA_CLONE = re.compile(r"\.remat(?:\d+|_compressed|_uncompressed)?(?:\.\d+)*$")
NO_WORK = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast"})


@dataclass(slots=True)
class RematResult(DataFrames):
    module_name: str
    source: str
    remat_instructions: int
    remat_fusions: int
    xla_remat_instructions: int
    recompute_flops: int
    recompute_transcendentals: int
    recompute_bytes_accessed: int
    xla_remat_flops: int
    xla_remat_bytes_accessed: int
    forward_flops: int
    scope_depth: int
    scope_prefix: str
    by_scope: list[Row] = field(default_factory=list)
    by_layer: list[Row] = field(default_factory=list)
    xla_clones: list[str] = field(default_factory=list)

    @property
    def recompute_overhead(self) -> float:
        return self.recompute_flops / self.forward_flops if self.forward_flops else 0.0

    def rows(self, by: str) -> list[Row]:
        return self.by_scope if by == "scope" else self.by_layer

    def to_dict(self) -> dict:
        return {
            "module": self.module_name,
            "source": self.source,
            "remat_instructions": self.remat_instructions,
            "remat_fusions": self.remat_fusions,
            "xla_remat_instructions": self.xla_remat_instructions,
            "recompute_flops": self.recompute_flops,
            "recompute_transcendentals": self.recompute_transcendentals,
            "recompute_bytes_accessed": self.recompute_bytes_accessed,
            "xla_remat_flops": self.xla_remat_flops,
            "xla_remat_bytes_accessed": self.xla_remat_bytes_accessed,
            "forward_flops": self.forward_flops,
            "recompute_overhead": self.recompute_overhead,
            "scope_depth": self.scope_depth,
            "scope_prefix": self.scope_prefix,
            "by_scope": [row.to_dict() for row in self.by_scope],
            "by_layer": [row.to_dict() for row in self.by_layer],
            "xla_clones": self.xla_clones,
        }


@dataclass(frozen=True, slots=True)
class RematCounts:
    instructions: int
    fusions: int
    xla_clones: list[str]


def is_jax_recomputed(op_name: str) -> bool:
    return JAX_MARKER in op_name


def is_xla_clone(name: str) -> bool:
    return ".remat" in name and XLA_CLONE.search(name) is not None


def clone_origin(name: str) -> str:
    """`fusion.3.remat2.1` -> `fusion.3`; a name that is no clone is its own origin."""
    return XLA_CLONE.sub("", name) if is_xla_clone(name) else name


def xla_added_charges(charged: list[Charge]) -> list[Charge]:
    """The charges of the copies XLA's rematerialization runs beyond one per original
    instruction (see the module docstring)."""
    cloned = {clone_origin(c.top.name) for c in charged if is_xla_clone(c.top.name)}
    copies: dict[str, dict[str, list[Charge]]] = {}
    for charge in charged:
        origin = clone_origin(charge.top.name)
        if origin in cloned:
            copies.setdefault(origin, {}).setdefault(charge.top.name, []).append(charge)
    added: list[Charge] = []
    for by_copy in copies.values():
        kept = max(by_copy.values(), key=lambda group: sum(c.cost.flops for c in group))
        added += [c for group in by_copy.values() if group is not kept for c in group]
    return added


def count_remat(module: HloModule) -> RematCounts:
    """Direct count of both markers over every computation (see the module docstring)."""
    marked_computations: set[str] = set()
    instructions = 0
    clones: list[str] = []
    for computation in module.computations.values():
        for instruction in computation.instructions:
            if instruction.opcode in NO_WORK:
                continue
            if is_xla_clone(instruction.name):
                clones.append(instruction.name)
            if "rematted_computation" in instruction.text and \
                    is_jax_recomputed(instruction.op_name):
                instructions += 1
                marked_computations.add(computation.name)
    fusions = sum(1 for _, i in module.instructions()
                  if i.opcode == "fusion" and i.called_computation("calls") in marked_computations)
    return RematCounts(instructions, fusions, clones)


def remat(module_or_analysis: HloModule | CostAnalysis,
          charged: list[Charge] | None = None,
          scope_depth: int = DEFAULT_SCOPE_DEPTH) -> RematResult:
    """Counts, costs and breakdowns of recomputation; pass `charged` to reuse a flops walk."""
    with paused_gc():
        analysis = cost_analysis(module_or_analysis)
        if charged is None:
            charged = costed_charges(analysis)
        return _result(analysis, charged, scope_depth)


def _result(analysis: CostAnalysis, charged: list[Charge], scope_depth: int) -> RematResult:
    module = analysis.module
    counts = count_remat(module)
    recomputed = [c for c in charged if c.phase is Phase.RECOMPUTE]
    cloned = xla_added_charges(charged)
    prefix = common_scope_prefix(charged)
    return RematResult(
        module_name=module.name,
        source=module.source,
        remat_instructions=counts.instructions,
        remat_fusions=counts.fusions,
        xla_remat_instructions=len(counts.xla_clones),
        recompute_flops=sum(c.cost.flops for c in recomputed),
        recompute_transcendentals=sum(c.cost.transcendentals for c in recomputed),
        recompute_bytes_accessed=sum(c.cost.bytes_accessed for c in recomputed),
        xla_remat_flops=sum(c.cost.flops for c in cloned),
        xla_remat_bytes_accessed=sum(c.cost.bytes_accessed for c in cloned),
        forward_flops=sum(c.cost.flops for c in charged if c.phase is Phase.FORWARD),
        scope_depth=scope_depth,
        scope_prefix="/".join(prefix),
        by_scope=_sorted(group(recomputed, lambda c: scope_key(c.op_name, scope_depth, prefix))),
        by_layer=layer_rows(recomputed),
        xla_clones=counts.xla_clones,
    )


def _sorted(rows: dict[str, Row]) -> list[Row]:
    return sorted(rows.values(), key=lambda r: (-r.flops, r.key))
