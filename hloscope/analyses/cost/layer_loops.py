"""Which while loops are a model's layer loop: the scan over its stacked layers.

A scanned model stacks each layer's parameters on a leading axis (`params['layers']['w1']` is
`[L, d, h]`) and `lax.scan` turns the stack into a while loop whose body takes one slice per
iteration. The trip count alone cannot say which loop that is: a micro-batch accumulation loop,
a blockwise-attention loop or a group of a nested scan may run as many times. So a loop is a
layer loop when

- **its body slices a stacked parameter**: an element of the loop's state, whose leading
  dimension equals the trip count, is read by a `dynamic-slice` in the body (or in a fusion of
  the body) and its data comes from an entry parameter that JAX named as a model parameter
  (`params[...]`, not the batch or the optimizer state; see hloscope.analyses.arguments). The
  data is followed back through the instructions that only move or convert it (copies,
  bitcasts, reshapes, converts, transposes, all-gathers, single-input fusions, tuples and
  loop states) and, inside an enclosing loop's body, through the `dynamic-slice` that takes
  that loop's slice: a nested scan's inner loop (`[L/G, G, ...]` sliced to `[G, ...]`) is then a
  layer loop too, and a layer is one iteration of every layer loop around it; or
- **its scope names the layers**: the while's op_name has a `layers` or `blocks` component
  (`jax.named_scope("layers")`, a Flax `nn.scan` named so).

The forward loop and the backward loop of one scan both slice the stacked parameters: both are
layer loops (the backward visits the layers in reverse, which no per-layer figure here depends
on: every iteration of a scan does the same work).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from hloscope.analyses.arguments import PARAMETER, argument_role
from hloscope.analyses.cost.graph import ComputationGraph
from hloscope.analyses.cost.loops import trip_count
from hloscope.analyses.cost.phases import scope_path
from hloscope.model.instruction import Instruction
from hloscope.model.module import HloModule

_MOVES = frozenset({"copy", "bitcast", "convert", "reshape", "transpose", "copy-start",
                    "copy-done", "all-gather", "all-gather-start", "all-gather-done",
                    "optimization-barrier", "async-start", "async-done"})
_LAYER_SCOPES = frozenset({"layers", "blocks"})
_DEPTH_LIMIT = 64


@dataclass(frozen=True, slots=True)
class LayerLoop:
    """A while loop over layers: `layers` iterations, found `because` of a stacked parameter
    (its pytree path) or its scope."""

    computation: str
    instruction: str
    layers: int
    because: str

    def to_dict(self) -> dict:
        return {"computation": self.computation, "instruction": self.instruction,
                "layers": self.layers, "because": self.because}


class LayerLoops:
    """The layer loops of a module, keyed by (computation, while instruction name)."""

    def __init__(self, module: HloModule, is_parameter_path=None,
                 graphs: dict[str, ComputationGraph] | None = None) -> None:
        self.module = module
        self._is_parameter = is_parameter_path or _is_model_parameter
        self._graphs = {} if graphs is None else graphs  # a cost analysis shares its own

    def graph(self, name: str) -> ComputationGraph | None:
        graph = self._graphs.get(name)
        if graph is None:
            computation = self.module.computations.get(name)
            if computation is None:
                return None
            graph = self._graphs[name] = ComputationGraph(computation)
        return graph

    @cached_property
    def callers(self) -> dict[str, tuple[str, Instruction]]:
        """Loop body -> (the computation holding the while, the while)."""
        found = {}
        for computation, instruction in self.module.instructions():
            if instruction.opcode == "while":
                body = instruction.called_computation("body")
                if body:
                    found[body] = (computation.name, instruction)
        return found

    @cached_property
    def loops(self) -> dict[tuple[str, str], LayerLoop]:
        found = {}
        for computation, instruction in self.module.instructions():
            if instruction.opcode == "while":
                loop = self._layer_loop(computation.name, instruction)
                if loop is not None:
                    found[(computation.name, instruction.name)] = loop
        return found

    def get(self, computation: str, instruction: str) -> LayerLoop | None:
        return self.loops.get((computation, instruction))

    def _layer_loop(self, computation: str, loop: Instruction) -> LayerLoop | None:
        caller = self.graph(computation)
        if caller is None:
            return None
        count = trip_count(loop, caller, self.graph)
        if not count.known or count.count < 1:
            return None
        path = self._stacked_parameter(caller, loop, count.count)
        if path is not None:
            return LayerLoop(computation, loop.name, count.count, f"slices {path}")
        scope = set(scope_path(loop.op_name)) & _LAYER_SCOPES
        if scope:
            return LayerLoop(computation, loop.name, count.count, f"scope {min(scope)}")
        return None

    def _stacked_parameter(self, caller: ComputationGraph, loop: Instruction,
                           layers: int) -> str | None:
        body = self.graph(loop.called_computation("body") or "")
        initial = caller.operands(loop)[0] if loop.operands else None
        if body is None or initial is None:
            return None
        for index in sorted(_sliced_state(body, self.graph)):
            element = _element(caller, initial, index)
            if element is None or element.shape.dimensions[:1] != (layers,):
                continue
            path = self._parameter_origin(caller, element, 0)
            if path is not None:
                return path
        return None

    def _parameter_origin(self, graph: ComputationGraph, value: Instruction,
                          depth: int) -> str | None:
        """The pytree path of the model parameter whose data `value` carries, if any."""
        while depth < _DEPTH_LIMIT:
            depth += 1
            opcode = value.opcode
            if opcode == "parameter":
                return self._parameter_path(graph, value, depth)
            if opcode == "get-tuple-element":
                source = graph.operands(value)[0]
                element = _element(graph, source, value.tuple_index or 0)
                if element is None:
                    if source.opcode == "parameter":
                        return self._state_origin(graph, source, value.tuple_index or 0, depth)
                    return None
                value = element
            elif opcode in _MOVES or opcode == "dynamic-slice":
                operands = graph.operands(value)
                if not operands:
                    return None
                value = operands[0]
            elif opcode == "fusion":
                number = _fused_data_operand(value, self.graph)
                operands = graph.operands(value)
                if number is None or number >= len(operands):
                    return None
                value = operands[number]
            else:
                return None
        return None

    def _parameter_path(self, graph: ComputationGraph, parameter: Instruction,
                        depth: int) -> str | None:
        if graph.computation.name == self.module.entry_name:
            path = parameter.op_name or parameter.name
            return path if self._is_parameter(path) else None
        return self._state_origin(graph, parameter, None, depth)

    def _state_origin(self, graph: ComputationGraph, parameter: Instruction, index: int | None,
                      depth: int) -> str | None:
        """Through a loop body's parameter (element `index` of the state) to its loop's init."""
        called = self.callers.get(graph.computation.name)
        if called is None:
            return None
        outer_name, loop = called
        outer = self.graph(outer_name)
        if outer is None or not loop.operands:
            return None
        initial = outer.operands(loop)[0]
        value = initial if index is None else _element(outer, initial, index)
        if value is None:
            return None
        return self._parameter_origin(outer, value, depth)


def _element(graph: ComputationGraph, value: Instruction, index: int) -> Instruction | None:
    """Element `index` of a tuple-valued instruction when it is a `tuple`."""
    while value.opcode in ("copy", "bitcast") and graph.operands(value):
        value = graph.operands(value)[0]
    if value.opcode != "tuple":
        return None
    operands = graph.operands(value)
    return operands[index] if index < len(operands) else None


def _sliced_state(body: ComputationGraph, graph_of) -> set[int]:
    """Indices of the loop state that the body reads with a dynamic-slice (directly, after
    moves, or as a fusion operand whose fused parameter a dynamic-slice reads)."""
    found: set[int] = set()
    for instruction in body.computation.instructions:
        if instruction.opcode != "get-tuple-element":
            continue
        source = body.operands(instruction)[0]
        if source.opcode != "parameter":
            continue
        if _reaches_dynamic_slice(body, instruction, 0, graph_of):
            found.add(instruction.tuple_index or 0)
    return found


def _reaches_dynamic_slice(body: ComputationGraph, value: Instruction, depth: int,
                           graph_of) -> bool:
    if depth > 8:
        return False
    for user in body.users(value):
        if user.opcode == "dynamic-slice" and body.operands(user)[0] is value:
            return True
        if user.opcode == "fusion" and _fusion_slices(user, body, value, depth, graph_of):
            return True
        if user.opcode in _MOVES and _reaches_dynamic_slice(body, user, depth + 1, graph_of):
            return True
    return False


def _fusion_slices(fusion: Instruction, body: ComputationGraph, value: Instruction, depth: int,
                   graph_of) -> bool:
    """Whether the fused computation dynamic-slices the parameter that `value` feeds."""
    fused = graph_of(fusion.called_computation("calls") or "")
    if fused is None:
        return False
    numbers = {n for n, operand in enumerate(body.operands(fusion)) if operand is value}
    return any(_reaches_dynamic_slice(fused, instruction, depth + 1, graph_of)
               for instruction in fused.computation.instructions
               if instruction.opcode == "parameter" and instruction.parameter_number in numbers)


def _fused_data_operand(fusion: Instruction, graph_of) -> int | None:
    """The operand whose data a fusion only moves, slices or converts (XLA's
    `dynamic-slice_bitcast_fusion`, `wrapped_convert`, ...): its fused root followed through
    those ops (a slice's data operand, not its index arithmetic) to a fused parameter."""
    fused = graph_of(fusion.called_computation("calls") or "")
    if fused is None:
        return None
    value = fused.root
    for _ in range(_DEPTH_LIMIT):
        if value.opcode == "parameter":
            return value.parameter_number
        operands = fused.operands(value)
        if not operands or (value.opcode not in _MOVES
                            and value.opcode not in ("dynamic-slice", "slice")):
            return None
        value = operands[0]
    return None


def _is_model_parameter(path: str) -> bool:
    return argument_role(path) == PARAMETER
