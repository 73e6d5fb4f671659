"""What each buffer is for: parameter, optimizer state, input, saved activation, gradient, ...

**Arguments.** An entry parameter is named after its pytree path, whose first component that
says what the argument is decides its category (hloscope.analyses.arguments). A buffer
that shares an argument's buffer (a donated, updated argument; its updated output) takes the
argument's category.

**Everything else**, by the phases JAX's name stack gives (`phases.py`) of the instruction that
makes the buffer and of those that read it: made in the forward pass (or outside
differentiation, as a causal mask built from constants is) and read by the backward pass (or its
recomputation): a *saved activation*, as JAX counts its residuals; made in the backward pass
and read outside differentiation (the optimizer): a *gradient*; a constant: *constant*;
returned by the program: *output*; the rest: a *temporary*. An instruction without a phase of
its own takes its operands' (what derives from the backward pass is optimizer work) or, inside a
loop body, its loop's.

**Saved activations across layers.** What the backward pass reads is often not the forward
value itself but a copy of it, so the readers of a value are looked for *through* the
instructions that only move data: a `copy`, `copy-start`/`copy-done` (TPU's prefetches between
HBM and VMEM), a `bitcast`, tuples, `get-tuple-element`, the carries of a `while`, `call` or
`conditional` (a scan's stacked residuals pass from the forward loop to the backward loop), async
ops, and every instruction XLA made without metadata (its name, borrowed from an operand, says
where its data came from, not where it is read: an async slice of a saved activation issued in
the backward pass is named after the forward op that made it). A forward value whose data a
backward or recompute op reaches this way is a saved activation, and so is every value of its
buffer (the values XLA's alias analysis puts in one buffer: a scan's stacked residual is made by a
`dynamic-update-slice` in the forward loop's body and read, as the loop's result, by the backward
loop). So a layer's residuals are categorised alike whether XLA saves them directly or moves them
first, and under full remat the checkpointed block input is a saved activation like any other.
An instruction's own phase still counts: a backward op named after a backward operand reads.
"""
from __future__ import annotations

import re
from enum import StrEnum

from hloscope.analyses.arguments import argument_path, argument_role, path_components
from hloscope.analyses.cost.phases import Phase, layer_of, phase_of
from hloscope.analyses.memory.liveness import Liveness
from hloscope.analyses.memory.liveness.inplace import InPlaceRules
from hloscope.analyses.memory.liveness.names import NAMELESS, resolve_names
from hloscope.analyses.memory.liveness.program import FlatProgram, control_flow_callees
from hloscope.analyses.memory.liveness.values import Value
from hloscope.model.instruction import Instruction


class Category(StrEnum):
    PARAMETER = "parameter"
    OPTIMIZER_STATE = "optimizer state"
    INPUT = "input"
    GRADIENT = "gradient"
    SAVED_ACTIVATION = "saved activation"
    TEMPORARY = "temporary"
    CONSTANT = "constant"
    OUTPUT = "output"


CATEGORY_ORDER = tuple(Category)
_NUMBER = re.compile(r"\d+")
_LAYER_WORDS = frozenset({"layers", "layer", "blocks", "block", "h"})
# Instructions that pass their operands' data on (see the module docstring).
_MOVERS = frozenset({
    "copy", "copy-start", "copy-done", "bitcast", "tuple", "get-tuple-element", "while", "call",
    "conditional", "async-start", "async-update", "async-done", "optimization-barrier",
})
_READERS_OF_SAVED = frozenset({Phase.BACKWARD, Phase.RECOMPUTE})
_MAKERS_OF_SAVED = frozenset({Phase.FORWARD, Phase.OTHER})


def argument_category(path: str) -> Category:
    return Category(argument_role(path))


def argument_layer(path: str) -> str | None:
    """`layer_0` for a path with a `layers`/`blocks` component followed by a number."""
    components = path_components(path)
    for word, following in zip(components, components[1:], strict=False):
        if word.lower() in _LAYER_WORDS and _NUMBER.fullmatch(following):
            return f"layer_{following}"
    return layer_of(path)


class Classifier:
    """Categories, phases and layers of a program's buffers."""

    def __init__(self, liveness: Liveness) -> None:
        self.liveness = liveness
        self.program = liveness.program
        names = resolve_names(self.program)
        self.namers, self.op_names = names.namer, names.op_name
        self.phases = instruction_phases(self.program, self.op_names)
        self._paths: dict[Instruction, str] = {}
        self._borrowed = names.borrowed
        self._argument_of_buffer = self._arguments_by_buffer()
        self._outputs = {id(v) for v in liveness.values if self._is_output(v)}
        self._saved = self._saved_buffers()

    def category(self, value: Value) -> Category:
        argument = self._argument_of_buffer.get(self.liveness.buffers.find(value.id))
        if argument is not None:
            return argument_category(self.argument_path(argument))
        if value.instruction.opcode == "constant":
            return Category.CONSTANT
        if id(value) in self._outputs:
            return Category.OUTPUT
        if self.liveness.buffers.find(value.id) in self._saved:
            return Category.SAVED_ACTIVATION
        made = self.phase(value.instruction)
        read = {self.phase(user) for user, _, _ in value.uses}
        if made is Phase.BACKWARD and read & {Phase.OPTIMIZER, Phase.OTHER}:
            return Category.GRADIENT
        return Category.TEMPORARY

    def phase(self, instruction: Instruction) -> Phase:
        return self.phases.get(instruction, Phase.OTHER)

    def op_name(self, instruction: Instruction) -> str:
        """The instruction's op_name, or the one it takes from its fusion or neighbours."""
        return self.op_names.get(instruction) or instruction.op_name

    def namer(self, instruction: Instruction) -> Instruction:
        """The instruction whose metadata (op_name, source line) describes `instruction`."""
        return self.namers.get(instruction, instruction)

    def argument(self, value: Value) -> Instruction | None:
        """The entry parameter whose buffer `value` shares, if any."""
        return self._argument_of_buffer.get(self.liveness.buffers.find(value.id))

    def argument_path(self, argument: Instruction) -> str:
        path = self._paths.get(argument)
        if path is None:
            path = self._paths[argument] = argument_path(argument)
        return path

    def layer(self, value: Value) -> str | None:
        argument = self.argument(value)
        if argument is not None:
            return argument_layer(self.argument_path(argument))
        return layer_of(self.op_name(value.instruction))

    def _arguments_by_buffer(self) -> dict[int, Instruction]:
        found: dict[int, Instruction] = {}
        entry = self.program.root
        for value in self.liveness.values:
            instruction = value.instruction
            if instruction.opcode == "parameter" and \
                    self.program.computation_of.get(instruction) is entry:
                found.setdefault(self.liveness.buffers.find(value.id), instruction)
        return found

    def _saved_buffers(self) -> set[int]:
        """The buffers holding a forward (or undifferentiated) value whose data the backward pass
        reads (`_ReaderGraph`)."""
        read = _ReaderGraph(self).buffers_read_by(_READERS_OF_SAVED)
        find = self.liveness.buffers.find
        return {find(v.id) for v in self.liveness.values
                if find(v.id) in read and self.phase(v.instruction) in _MAKERS_OF_SAVED}

    def _is_output(self, value: Value) -> bool:
        root = self.program.root.root
        return any(instruction is root for instruction, _ in value.positions)


class _ReaderGraph:
    """Which buffers' data is read by instructions of some phases: directly, through the
    instructions that move it (`_MOVERS`, or named by a neighbour), through the other values of
    its buffer (a loop carry, an in-place update), and through in-place updates that write it
    into another buffer (a scan's `dynamic-update-slice` into its stacked residuals).

    Buffers are the nodes; the values a mover of a buffer's data defines are its successors.
    A buffer is read by a phase when a buffer reachable from it has a user of that phase: one
    search backwards from those buffers answers for every buffer at once."""

    def __init__(self, classifier: Classifier) -> None:
        liveness, find = classifier.liveness, classifier.liveness.buffers.find
        in_place = InPlaceRules(classifier.program.module)
        defined: dict[Instruction, list[Value]] = {}
        for value in liveness.values:
            defined.setdefault(value.instruction, []).append(value)
        moves: dict[Instruction, bool] = {}
        self.direct: dict[int, set[Phase]] = {}
        self.sources: dict[int, set[int]] = {}  # buffer -> the buffers whose data moves into it
        for value in liveness.values:
            buffer = find(value.id)
            phases = self.direct.setdefault(buffer, set())
            for user, _, _ in value.uses:
                phases.add(classifier.phase(user))
                if user not in moves:
                    moves[user] = user.opcode in _MOVERS or user in classifier._borrowed or \
                        bool(in_place.pairs(user))
                if moves[user]:
                    for moved in defined.get(user, ()):
                        self.sources.setdefault(find(moved.id), set()).add(buffer)

    def buffers_read_by(self, phases: frozenset[Phase]) -> set[int]:
        pending = [buffer for buffer, found in self.direct.items() if found & phases]
        reached = set(pending)
        while pending:
            for source in self.sources.get(pending.pop(), ()):
                if source not in reached:
                    reached.add(source)
                    pending.append(source)
        return reached


def instruction_phases(program: FlatProgram,
                       op_names: dict[Instruction, str]) -> dict[Instruction, Phase]:
    """The phase of every flattened instruction (see the module docstring)."""
    phases: dict[Instruction, Phase] = {}
    _phases_of(program, program.root.name, None, op_names, phases)
    return phases


def _phases_of(program: FlatProgram, name: str, inherited: Phase | None,
               op_names: dict[Instruction, str], phases: dict[Instruction, Phase]) -> None:
    computation = program.module.computation(name)
    stated: dict[Instruction, Phase | None] = {}
    from_backward: set[Instruction] = set()
    for instruction in computation.instructions:
        if instruction not in program.time:
            continue
        if instruction.opcode in NAMELESS:
            if inherited is not None:
                phases[instruction] = inherited
            continue
        op_name = op_names.get(instruction, "")
        phase = phase_of(op_name) if op_name else None
        operands = program.operands[instruction]
        if phase is None and inherited is None and any(o in from_backward for o in operands):
            phase = Phase.OPTIMIZER
        if phase is Phase.BACKWARD or phase is Phase.OPTIMIZER:
            from_backward.add(instruction)
        stated[instruction] = phase
        for callee in control_flow_callees(instruction):
            _phases_of(program, callee, phase or inherited, op_names, phases)
    _optimizer_inputs(program, computation.instructions, stated)
    for instruction, phase in stated.items():
        phases[instruction] = phase or inherited or Phase.OTHER


def _optimizer_inputs(program: FlatProgram, instructions: list[Instruction],
                      stated: dict[Instruction, Phase | None]) -> None:
    """Unnamed instructions read only by optimizer work are optimizer work."""
    for instruction in reversed(instructions):
        if stated.get(instruction, Phase.OTHER) is not None:
            continue
        users = [u for u, _ in program.users.get(instruction, ()) if u.opcode != "tuple"]
        if users and any(stated.get(u) is Phase.OPTIMIZER for u in users):
            stated[instruction] = Phase.OPTIMIZER
