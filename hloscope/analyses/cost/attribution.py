"""Splits a module's cost into charges: who did each FLOP and byte, in which phase and loop.

The walk starts at the entry computation and follows what runs: a fusion's cost is charged to
its fused instructions (its bytes, counted at the fusion's boundary, are split among them in
proportion to their FLOPs + transcendentals, or charged to the fusion itself when they do none),
calls and async starts to their callee's instructions, a while loop's to its body (x trip count)
and condition (x trip count + 1), a conditional's to the branch that supplies each property
(XLA's per-property maximum). Everything else is a leaf: a reduce is charged with its reducer.
The charges of a module add up exactly to CostAnalysis.total.

Names: an instruction without op_name (XLA's converts, copies and bitcasts) takes the op_name of
its first named operand other than a parameter or constant, else of its first named user, else
its caller's; scope, layer and phase follow from that name.

Phases (see hloscope.analyses.cost.phases for what an op_name states):
- an instruction in a called computation (fused, loop body, branch, ...) whose name states no
  phase takes its caller's: a fused op of a backward fusion is backward;
- in the entry computation, an instruction whose name states no phase is `optimizer` when it is
  part of the update after the gradients -- it consumes a value derived from a backward op, or
  its value flows into such an instruction other than a tuple (`beta * m` does, through the
  moment update) -- and `other` when it is not.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from hloscope.analyses.cost import Cost, CostAnalysis
from hloscope.analyses.cost.graph import ComputationGraph
from hloscope.analyses.cost.layer_loops import LayerLoops
from hloscope.analyses.cost.phases import Phase, layer_of, phase_of
from hloscope.model.instruction import Instruction
from hloscope.model.opcodes import PROGRAM_CALLERS

Mask = tuple[int, int, int, int]
ONE: Mask = (1, 1, 1, 1)
_NAMELESS = frozenset({"parameter", "constant"})


@dataclass(frozen=True, slots=True)
class Loop:
    """The outermost while loop around a charge: one iteration is one layer of a scan."""

    computation: str
    instruction: str
    iterations: int


@dataclass(slots=True)
class Charge:
    computation: str
    instruction: Instruction
    top: Instruction  # the instruction of a non-fused computation that runs this one
    op_name: str
    phase: Phase
    loop: Loop | None
    cost: Cost
    layers: int = 0  # the layers one run of it serves: the layer loops' trip counts multiplied

    @property
    def opcode(self) -> str:
        return self.instruction.opcode

    @property
    def layer(self) -> str | None:
        return layer_of(self.op_name) if self.op_name else None


@dataclass(frozen=True, slots=True)
class _Context:
    mask: Mask = ONE
    inherited: Phase | None = None
    caller_name: str = ""  # op_name of the calling instruction, for unnamed callee ops
    loop: Loop | None = None
    top: Instruction | None = None  # set inside fusions
    fused: bool = False
    layers: int = 0


def charges(analysis: CostAnalysis, root: str | None = None) -> list[Charge]:
    """The charges of running `root` (default: the entry computation)."""
    walker = _Walker(analysis, analysis.layer_loops())
    return list(walker.computation(root or analysis.module.entry_name, _Context()))


def resolve_names(graph: ComputationGraph, op_names: list[str]) -> list[str]:
    """Each instruction's op_name; one without takes its first named operand's (parameters and
    constants name nothing), else its first named user's (XLA's converts, copies, bitcasts)."""
    names = list(op_names)
    if all(names):
        return names
    instructions = graph.computation.instructions
    index = {i.name: n for n, i in enumerate(instructions)}
    for n, instruction in enumerate(instructions):
        if not names[n]:
            names[n] = next((names[index[o.name]] for o in graph.operands(instruction)
                             if o.opcode not in _NAMELESS and names[index[o.name]]), "")
    for n in range(len(instructions) - 1, -1, -1):
        if not names[n]:
            names[n] = next((names[index[u.name]] for u in graph.users(instructions[n])
                             if names[index[u.name]]), "")
    return names


def computation_phases(graph: ComputationGraph, names: list[str],
                       inherited: Phase | None) -> list[Phase]:
    """The phase of each instruction of a computation (rules in the module docstring)."""
    stated = [phase_of(name) if name else None for name in names]
    if inherited is not None:
        return [phase or inherited for phase in stated]
    instructions = graph.computation.instructions
    index = {i.name: n for n, i in enumerate(instructions)}
    phases: list[Phase | None] = list(stated)
    derived = [False] * len(instructions)
    for n, instruction in enumerate(instructions):
        phase = phases[n]
        derived[n] = phase is Phase.BACKWARD or (phase is None and any(
            derived[index[o.name]] for o in graph.operands(instruction)))
        if phase is None and derived[n]:
            phases[n] = Phase.OPTIMIZER
    for n in range(len(instructions) - 1, -1, -1):
        if phases[n] is None and any(phases[index[u.name]] is Phase.OPTIMIZER
                                     for u in graph.users(instructions[n])
                                     if u.opcode != "tuple"):
            phases[n] = Phase.OPTIMIZER
    return [phase or Phase.OTHER for phase in phases]


class _Walker:
    def __init__(self, analysis: CostAnalysis, layer_loops: LayerLoops) -> None:
        self.analysis = analysis
        self.layer_loops = layer_loops

    def computation(self, name: str, context: _Context) -> Iterator[Charge]:
        graph = self.analysis.graph(name)
        instructions = graph.computation.instructions
        costs = self.analysis.computation_costs(name).costs
        op_names = resolve_names(graph, [i.op_name for i in instructions])
        phases = computation_phases(graph, op_names, context.inherited)
        for instruction, op_name, phase, cost in zip(instructions, op_names, phases, costs,
                                                     strict=True):
            yield from self._instruction(name, instruction, op_name or context.caller_name,
                                         phase, cost, context)

    def _instruction(self, computation: str, instruction: Instruction, op_name: str,
                     phase: Phase, cost: Cost, context: _Context) -> Iterator[Charge]:
        opcode = instruction.opcode
        if opcode not in PROGRAM_CALLERS:
            yield self._leaf(computation, instruction, op_name, phase, cost, context)
            return
        inner = replace(context, inherited=phase, caller_name=op_name)
        if opcode == "fusion" and not _is_custom_gather(self.analysis, instruction):
            yield from self._fusion(computation, instruction, phase, cost, inner)
        elif opcode == "while":
            yield from self._while(computation, instruction, inner)
        elif opcode == "call":
            yield from self.computation(instruction.required_called_computation("to_apply"), inner)
        elif opcode == "async-start":
            yield from self.computation(instruction.required_called_computation("calls"), inner)
        elif opcode == "conditional":
            yield from self._conditional(instruction, inner)
        else:
            yield self._leaf(computation, instruction, op_name, phase, cost, context)

    @staticmethod
    def _leaf(computation: str, instruction: Instruction, op_name: str, phase: Phase,
              cost: Cost, context: _Context) -> Charge:
        cost = cost.masked(context.mask)
        if context.fused:
            cost = cost.with_bytes(0)
        return Charge(computation, instruction, context.top or instruction, op_name, phase,
                      context.loop, cost, context.layers)

    def _fusion(self, computation: str, fusion: Instruction, phase: Phase, cost: Cost,
                context: _Context) -> Iterator[Charge]:
        inner_context = replace(context, fused=True, top=context.top or fusion)
        inner = list(self.computation(fusion.required_called_computation("calls"), inner_context))
        if context.fused:
            yield from inner
            return
        bytes_accessed = cost.bytes_accessed * context.mask[2]
        weights = [max(c.cost.flops + c.cost.transcendentals, 0) for c in inner]
        if sum(weights) == 0:
            yield from inner
            yield Charge(computation, fusion, fusion, fusion.op_name, phase, context.loop,
                         Cost(bytes_accessed=bytes_accessed), context.layers)
            return
        for charge, share in zip(inner, split(bytes_accessed, weights), strict=True):
            charge.cost = charge.cost.with_bytes(share)
            yield charge

    def _while(self, computation: str, loop: Instruction,
               context: _Context) -> Iterator[Charge]:
        body_times, condition_times = self.analysis.loop_factors(computation, loop)
        enclosing = context.loop or Loop(computation, loop.name,
                                         self.analysis.trip_count(computation, loop).count)
        layer_loop = self.layer_loops.get(computation, loop.name)
        layers = context.layers
        if layer_loop is not None:
            layers = max(layers, 1) * layer_loop.layers
        for key, times in (("body", body_times), ("condition", condition_times)):
            mask = (context.mask[0] * times, context.mask[1] * times,
                    context.mask[2] * times, context.mask[3] * times)
            yield from self.computation(loop.required_called_computation(key),
                                        replace(context, mask=mask, loop=enclosing,
                                                layers=layers))

    def _conditional(self, conditional: Instruction, context: _Context) -> Iterator[Charge]:
        branches, chosen = self.analysis.branch_choice(conditional)
        for index, branch in enumerate(branches):
            a, b, c, d = (m if chosen[p] == index else 0 for p, m in enumerate(context.mask))
            mask: Mask = (a, b, c, d)
            if any(mask):
                yield from self.computation(branch, replace(context, mask=mask))


def split(amount: int, weights: list[int]) -> list[int]:
    """`amount` split in proportion to `weights` (largest remainders), summing exactly."""
    whole = sum(weights)
    shares = [amount * w // whole for w in weights]
    remainders = sorted(range(len(weights)), key=lambda i: -(amount * weights[i] % whole))
    for i in remainders[: amount - sum(shares)]:
        shares[i] += 1
    return shares



def _is_custom_gather(analysis: CostAnalysis, fusion: Instruction) -> bool:
    """XLA costs a kCustom fusion holding a gather or scatter as that one instruction."""
    if fusion.fusion_kind != "kCustom":
        return False
    fused = analysis.graph(fusion.required_called_computation("calls")).computation
    return any(i.opcode in ("gather", "scatter") for i in fused.instructions)
