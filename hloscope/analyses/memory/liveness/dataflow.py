"""Which logical buffers each instruction of a flattened program holds (XLA's dataflow analysis).

Follows xla/hlo/analysis/hlo_dataflow_analysis.cc in SSA form with bitcasts not defining values,
as buffer assignment runs it:

- most instructions define a new value at every index of their shape;
- bitcast, get-tuple-element, add-dependency, domain, optimization-barrier, copy-done and
  all-reduce-done define nothing: they hold (part of) an operand's values;
- tuple and copy define only their pointer table (a copy of a tuple is shallow);
- copy-start defines its destination {0} and context {2} and holds the source at {1};
  async-start, -update and -done, all-gather-start/-done, collective-permute-start/-done, send
  and recv-done hold their operands' arrays and define the rest (tables, destinations, contexts);
- a call holds its computation's root values, whose parameters hold the call's operands;
- a conditional's branches see its operands; its result is a phi of the branch roots;
- a while, its body's and its condition's parameters are phis of the initial value and the body's
  root.

In-place reuse (dynamic-update-slice, scatter, ...) is not dataflow: those ops define new values
that the alias analysis later puts in the same buffer as their operand (`aliasing.py`).
"""
from __future__ import annotations

from collections.abc import Callable

from hloscope.analyses.memory.liveness.program import (
    FlatProgram,
    async_computation,
    branch_computations,
)
from hloscope.analyses.memory.liveness.values import (
    Index,
    TreeIndexError,
    TupleNode,
    Value,
    ValueTree,
    shape_error,
    subtree,
    walk,
)
from hloscope.calibration import tpu as tpu_calibration
from hloscope.model.instruction import Instruction
from hloscope.model.module import Computation
from hloscope.model.shape import Shape

Pick = Callable[[Index, Shape], ValueTree | None]
# TPU: a tuple table made on the SparseCore is in its memory, not in HBM
SPARSECORE_TABLE_SPACE = int(tpu_calibration.SPARSECORE_TABLE_SPACE.value)
_SPARSECORE = "sparsecore"
_FORWARD_OPERAND = frozenset({"bitcast", "add-dependency", "domain", "opt-barrier",
                              "optimization-barrier", "all-reduce-done"})


class Dataflow:
    """Value trees of a flattened program's instructions; `values` lists every value made."""

    def __init__(self, program: FlatProgram) -> None:
        self.program = program
        self.values: list[Value] = []
        self.phis: list[Value] = []
        self.trees: dict[Instruction, ValueTree] = {}
        self._bound: dict[str, list[ValueTree]] = {}
        self._evaluated: set[str] = set()

    def run(self) -> Dataflow:
        self._evaluate(self.program.root)
        return self

    # --- values --------------------------------------------------------------------------
    def new_value(self, instruction: Instruction, index: Index, shape: Shape,
                  is_phi: bool = False) -> Value:
        value = Value(len(self.values), instruction, index, shape, is_phi)
        if shape.is_tuple:
            computation = self.program.computation_of.get(instruction)
            if computation is not None and computation.execution_thread == _SPARSECORE:
                value.space = SPARSECORE_TABLE_SPACE
        self.values.append(value)
        if is_phi:
            self.phis.append(value)
        return value

    def build(self, instruction: Instruction, shape: Shape, pick: Pick | None = None,
              index: Index = (), is_phi: bool = False) -> ValueTree:
        """A tree for `shape`: `pick` may supply a subtree; every other position gets a value."""
        given = pick(index, shape) if pick else None
        if given is not None:
            return given
        value = self.new_value(instruction, index, shape, is_phi)
        if not shape.is_tuple:
            return value
        return TupleNode(value, [self.build(instruction, sub, pick, (*index, i), is_phi)
                                 for i, sub in enumerate(shape.tuple_shapes)])

    # --- computations --------------------------------------------------------------------
    def _evaluate(self, computation: Computation) -> None:
        if computation.name in self._evaluated:
            return
        self._evaluated.add(computation.name)
        for instruction in computation.instructions:
            self.trees[instruction] = self._tree(instruction, computation)

    def _evaluate_with(self, name: str, parameters: list[ValueTree]) -> Computation:
        computation = self.program.module.computation(name)
        self._bound.setdefault(computation.name, parameters)
        self._evaluate(computation)
        return computation

    def _operand_trees(self, instruction: Instruction) -> list[ValueTree]:
        return [self.trees[o] for o in self.program.operands[instruction]]

    def _tree(self, instruction: Instruction, computation: Computation) -> ValueTree:
        opcode = instruction.opcode
        handler = _HANDLERS.get(opcode)
        if handler is not None:
            try:
                return handler(self, instruction, computation)
            except TreeIndexError as error:
                raise shape_error(instruction, error) from None
        if opcode in _FORWARD_OPERAND:
            return self._operand_trees(instruction)[0]
        return self.build(instruction, instruction.shape)

    # --- opcodes ---------------------------------------------------------------------------
    def _parameter(self, instruction: Instruction, computation: Computation) -> ValueTree:
        bound = self._bound.get(computation.name)
        number = instruction.parameter_number
        if bound is not None and number < len(bound):
            return bound[number]
        return self.build(instruction, instruction.shape)

    def _get_tuple_element(self, instruction: Instruction, _: Computation) -> ValueTree:
        operand = self._operand_trees(instruction)[0]
        return subtree(operand, (instruction.tuple_index or 0,))

    def _tuple(self, instruction: Instruction, _: Computation) -> ValueTree:
        table = self.new_value(instruction, (), instruction.shape)
        return TupleNode(table, self._operand_trees(instruction))

    def _copy(self, instruction: Instruction, _: Computation) -> ValueTree:
        operand = self._operand_trees(instruction)[0]
        top = self.new_value(instruction, (), instruction.shape)
        return TupleNode(top, operand.children) if isinstance(operand, TupleNode) else top

    def _copy_start(self, instruction: Instruction, _: Computation) -> ValueTree:
        source = self._operand_trees(instruction)[0]
        return self.build(instruction, instruction.shape,
                          lambda index, shape: source if index == (1,) else None)

    def _copy_done(self, instruction: Instruction, _: Computation) -> ValueTree:
        return subtree(self._operand_trees(instruction)[0], (0,))

    def _while(self, instruction: Instruction, _: Computation) -> ValueTree:
        init = self._operand_trees(instruction)[0]
        shape = instruction.shape
        loop = self.build(instruction, shape, is_phi=True)
        merged = [loop]
        body_root, passes_through = init, False
        for key in ("condition", "body"):
            name = instruction.called_computation(key)
            parameter = self.program.parameter(name, 0) if name else None
            if not name or parameter is None:
                if name:  # a lenient load lets a loop computation without parameter(0) in
                    raise instruction.error(f"while: its {key} {name} has no parameter(0)",
                                            instruction.operands_start)
                continue
            phis = self.build(parameter, shape, is_phi=True)
            merged.append(phis)
            computation = self._evaluate_with(name, [phis])
            if key == "body":
                body_root = self.trees[computation.root]
                passes_through = computation.root is parameter
        if not _same_leaf_count(merged + [init, body_root]):
            raise instruction.error("while: its operand, its shape and its body's parameter and "
                                    "result are tuples of different sizes",
                                    instruction.operands_start)
        _set_loop_inputs(merged, init, body_root, passes_through)
        return loop

    def _conditional(self, instruction: Instruction, _: Computation) -> ValueTree:
        operands = self._operand_trees(instruction)
        roots = []
        for j, name in enumerate(branch_computations(instruction)):
            branch = self._evaluate_with(name, [operands[j + 1]] if j + 1 < len(operands) else [])
            roots.append(self.trees[branch.root])
        result = self.build(instruction, instruction.shape, is_phi=True)
        branch_values = [[value for _, value in walk(root)] for root in roots]
        for position, (_index, merged) in enumerate(walk(result)):
            merged.phi_inputs = [values[position] for values in branch_values
                                 if position < len(values)]
        return result

    def _call(self, instruction: Instruction, _: Computation) -> ValueTree:
        names = instruction.called_computations
        if not names:
            return self.build(instruction, instruction.shape)
        callee = self._evaluate_with(names[0], self._operand_trees(instruction))
        return self.trees[callee.root]

    def _async_start(self, instruction: Instruction, _: Computation) -> ValueTree:
        operands = self._operand_trees(instruction)
        name = async_computation(self.program, instruction)
        root = self.trees[self._evaluate_with(name, operands).root] if name else None

        def pick(index: Index, shape: Shape) -> ValueTree | None:
            if shape.is_tuple or not index or index[0] > 1:
                return None
            if index[0] == 0:
                in_range = len(index) > 1 and index[1] < len(operands)
                return subtree(operands[index[1]], index[2:]) if in_range else None
            return subtree(root, index[1:]) if root is not None else None

        return self.build(instruction, instruction.shape, pick)

    def _async_update(self, instruction: Instruction, _: Computation) -> ValueTree:
        operand = self._operand_trees(instruction)[0]
        return self.build(instruction, instruction.shape,
                          lambda index, shape: None if shape.is_tuple else subtree(operand, index))

    def _async_done(self, instruction: Instruction, _: Computation) -> ValueTree:
        operand = self._operand_trees(instruction)[0]
        return self.build(instruction, instruction.shape,
                          lambda index, shape: None if shape.is_tuple
                          else subtree(operand, (1, *index)))

    def _done_of_pair(self, instruction: Instruction, _: Computation) -> ValueTree:
        """all-gather-done, collective-permute-done: the start's destination at {1}."""
        operand = self._operand_trees(instruction)[0]
        return self.build(instruction, instruction.shape,
                          lambda index, shape: None if shape.is_tuple
                          else subtree(operand, (1, *index)))

    def _all_gather_start(self, instruction: Instruction, _: Computation) -> ValueTree:
        operands = self._operand_trees(instruction)

        def pick(index: Index, shape: Shape) -> ValueTree | None:
            if shape.is_tuple or not index or index[0] != 0:
                return None
            return operands[index[1]] if len(operands) > 1 else operands[0]

        return self.build(instruction, instruction.shape, pick)

    def _collective_permute_start(self, instruction: Instruction, _: Computation) -> ValueTree:
        operands = self._operand_trees(instruction)
        in_place = len(operands) == 4

        def pick(index: Index, shape: Shape) -> ValueTree | None:
            if not index or index[0] != 0:
                return None
            if not in_place and len(operands) > 1:
                return operands[index[1]] if len(index) == 2 else None
            if isinstance(operands[0], TupleNode):
                return subtree(operands[0], index[1:]) if len(index) == 2 else None
            return operands[0] if index == (0,) else None

        return self.build(instruction, instruction.shape, pick)

    def _send(self, instruction: Instruction, _: Computation) -> ValueTree:
        operand = self._operand_trees(instruction)[0]
        return self.build(instruction, instruction.shape,
                          lambda index, shape: subtree(operand, index[1:])
                          if index and index[0] == 0 else None)

    def _recv_done(self, instruction: Instruction, _: Computation) -> ValueTree:
        operand = self._operand_trees(instruction)[0]
        return self.build(instruction, instruction.shape,
                          lambda index, shape: subtree(operand, index)
                          if index and index[0] == 0 else None)


def _same_leaf_count(trees: list[ValueTree]) -> bool:
    return len({sum(1 for _ in walk(tree)) for tree in trees}) == 1


def _set_loop_inputs(merged: list[ValueTree], init: ValueTree, root: ValueTree,
                     passes_through: bool) -> None:
    """The while's phis merge (body root, init); its parameters' phis (init, body root)."""
    initial = [value for _, value in walk(init)]
    carried = [value for _, value in walk(root)]
    for tree_number, tree in enumerate(merged):
        for position, (_, phi) in enumerate(walk(tree)):
            first, last = initial[position], carried[position]
            if tree_number == 0:
                phi.phi_inputs = [last, first]
            else:
                phi.phi_inputs = [first] if passes_through else [first, last]


_HANDLERS: dict[str, Callable[[Dataflow, Instruction, Computation], ValueTree]] = {
    "parameter": Dataflow._parameter,
    "get-tuple-element": Dataflow._get_tuple_element,
    "tuple": Dataflow._tuple,
    "copy": Dataflow._copy,
    "copy-start": Dataflow._copy_start,
    "copy-done": Dataflow._copy_done,
    "while": Dataflow._while,
    "conditional": Dataflow._conditional,
    "call": Dataflow._call,
    "async-start": Dataflow._async_start,
    "async-update": Dataflow._async_update,
    "async-done": Dataflow._async_done,
    "all-gather-start": Dataflow._all_gather_start,
    "all-gather-done": Dataflow._done_of_pair,
    "collective-permute-start": Dataflow._collective_permute_start,
    "collective-permute-done": Dataflow._done_of_pair,
    "send": Dataflow._send,
    "recv-done": Dataflow._recv_done,
}
