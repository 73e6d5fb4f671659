"""Which layers a buffer holds, when the layers are scanned.

Unrolled layers name themselves (`layer_3` in the op_name; see Classifier.layer). A scan over
stacked layers (its loops found by hloscope.analyses.cost.layer_loops) names none, so here:

- a buffer that is an element of a layer loop's state with the loop's trip count as its leading
  dimension — the stacked parameters, their gradients, the saved activations a forward loop
  stacks for the backward loop — holds one slice per layer: it is split into `layer_0` ..
  `layer_{L-1}`, an equal share each (an inner loop's, inside an outer layer loop, holds the
  current group's: it counts as the outer loop's body). In a nested scan the outer loop's
  elements are `[groups, per group, ...]` (split into every layer) or `[groups, ...]` (one
  slice per group of layers: `layer_0-3`, `layer_4-7`, ...);
- an argument whose pytree path names the layers (`params['layers']['w1']`,
  `opt_state.mu['blocks'][...]`) with the model's layer count as its leading dimension is split
  alike;
- any other buffer made inside a layer loop's body belongs to the layer that iteration runs,
  which is every layer in turn: it is `LOOP_BODY`.
"""
from __future__ import annotations

from functools import cached_property

from hloscope.analyses.arguments import path_components
from hloscope.analyses.cost.layer_loops import LayerLoop, LayerLoops
from hloscope.analyses.memory.liveness import Liveness
from hloscope.analyses.memory.liveness.program import control_flow_callees
from hloscope.analyses.memory.liveness.values import Value

LOOP_BODY = "(the layer loop's current layer)"
_LAYER_WORDS = frozenset({"layers", "blocks"})


class ScannedLayers:
    """The layers of each buffer of a program whose layers are scanned."""

    def __init__(self, liveness: Liveness) -> None:
        self.liveness = liveness
        self.loops = LayerLoops(liveness.program.module)

    @cached_property
    def layer_count(self) -> int:
        """The model's layers: the layer loops' trip counts multiplied along their nesting."""
        return max((self._nested_layers(loop) for loop in self._outermost()), default=0)

    @cached_property
    def _within(self) -> dict[str, LayerLoop]:
        """Computation -> the innermost layer loop whose body runs it."""
        found: dict[str, LayerLoop] = {}
        module = self.liveness.program.module
        for loop in self.loops.loops.values():
            body = _body(module, loop)
            if body:
                for name in self._reached(body):
                    current = found.get(name)
                    if current is None or self._inside(loop, current):
                        found[name] = loop
        return found

    @cached_property
    def _stacked(self) -> dict[int, tuple[str, ...]]:
        """Buffer -> the layer keys its equal shares belong to."""
        find = self.liveness.buffers.find
        found: dict[int, tuple[str, ...]] = {}
        for value in self.liveness.values:
            keys = self._state_keys(value) or self._argument_keys(value)
            if keys:
                found.setdefault(find(value.id), keys)
        return found

    def keys(self, value: Value) -> tuple[str, ...]:
        """The layers whose equal shares `value`'s buffer holds, or () when it is not stacked."""
        if not self.loops.loops:
            return ()
        return self._stacked.get(self.liveness.buffers.find(value.id), ())

    def in_loop_body(self, value: Value) -> bool:
        computation = self.liveness.program.computation_of.get(value.instruction)
        return computation is not None and computation.name in self._within

    def _state_keys(self, value: Value) -> tuple[str, ...]:
        dims = value.shape.dimensions if value.shape.is_array else ()
        for instruction, index in value.positions:
            if instruction.opcode != "while" or len(index) != 1:
                continue
            computation = self.liveness.program.computation_of.get(instruction)
            if computation is None:
                continue
            loop = self.loops.get(computation.name, instruction.name)
            if loop and computation.name not in self._within and dims[:1] == (loop.layers,):
                return self._split(loop, dims)
        return ()

    def _split(self, loop: LayerLoop, dims: tuple[int, ...]) -> tuple[str, ...]:
        inner = self._nested_layers(loop) // loop.layers
        if inner <= 1 or dims[1:2] == (inner,):
            return tuple(f"layer_{i}" for i in range(loop.layers * max(inner, 1)))
        return tuple(f"layer_{g * inner}-{g * inner + inner - 1}" for g in range(loop.layers))

    def _argument_keys(self, value: Value) -> tuple[str, ...]:
        instruction = value.instruction
        program = self.liveness.program
        if instruction.opcode != "parameter" or program.computation_of.get(
                instruction) is not program.root or not value.shape.is_array:
            return ()
        layers = self.layer_count
        words = {w.lower() for w in path_components(instruction.op_name or instruction.name)}
        if layers > 1 and words & _LAYER_WORDS and value.shape.dimensions[:1] == (layers,):
            return tuple(f"layer_{i}" for i in range(layers))
        return ()

    def _nested_layers(self, loop: LayerLoop) -> int:
        module = self.liveness.program.module
        inner = [other for other in self.loops.loops.values()
                 if other is not loop and other.computation in self._reached(_body(module, loop))]
        return loop.layers * max((self._nested_layers(o) for o in inner), default=1)

    def _outermost(self) -> list[LayerLoop]:
        module = self.liveness.program.module
        inner: set[str] = set()
        for loop in self.loops.loops.values():
            inner |= self._reached(_body(module, loop))
        return [loop for loop in self.loops.loops.values() if loop.computation not in inner]

    def _inside(self, loop: LayerLoop, other: LayerLoop) -> bool:
        """Whether `loop` runs inside `other`'s body."""
        return loop.computation in self._reached(_body(self.liveness.program.module, other))

    def _reached(self, name: str | None) -> frozenset[str]:
        return _reached(self.liveness.program.module, name or "", self._reach_cache)

    @cached_property
    def _reach_cache(self) -> dict[str, frozenset[str]]:
        return {}


def _body(module, loop: LayerLoop) -> str | None:
    computation = module.computations.get(loop.computation)
    if computation is None:
        return None
    instruction = next((i for i in computation.instructions if i.name == loop.instruction), None)
    return instruction.called_computation("body") if instruction is not None else None


def _reached(module, name: str, cache: dict[str, frozenset[str]]) -> frozenset[str]:
    """`name` and the computations its control flow runs, transitively."""
    found = cache.get(name)
    if found is not None:
        return found
    reached, pending = {name}, [name]
    while pending:
        computation = module.computations.get(pending.pop())
        if computation is None:
            continue
        for instruction in computation.instructions:
            for callee in control_flow_callees(instruction):
                if callee not in reached:
                    reached.add(callee)
                    pending.append(callee)
    cache[name] = frozenset(reached)
    return cache[name]
