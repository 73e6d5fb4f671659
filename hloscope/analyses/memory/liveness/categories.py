"""What each buffer is for: parameter, optimizer state, input, saved activation, gradient, ...

**Arguments.** An entry parameter is named after its pytree path: JAX puts the path in the
parameter's `op_name` (`state.params['layers'][0]['mlp']['fc']['w']`) and in its name on CPU
(`state_params__layers___0___mlp____fc____w__.1`). The first component that says what the
argument is decides: `params`/`weights`/... a parameter; `opt_state`, `mu`, `nu`, `master`,
`momentum`, `step`, ... optimizer state (fp32 master weights belong to the optimizer in mixed
precision); `batch`, `inputs`, `tokens`, ... an input. Anything else is a parameter. A buffer
that shares an argument's buffer (a donated, updated argument; its updated output) takes the
argument's category.

**Everything else**, by the phases JAX's name stack gives (`phases.py`) of the instruction that
makes the buffer and of those that read it: made in the forward pass and read by the backward
pass (or its recomputation): a *saved activation*; made in the backward pass and read outside
differentiation (the optimizer): a *gradient*; a constant: *constant*; returned by the program:
*output*; the rest: a *temporary*. An instruction without a phase of its own takes its
operands' (what derives from the backward pass is optimizer work) or, inside a loop body, its
loop's.
"""
from __future__ import annotations

import re
from enum import StrEnum

from hloscope.analyses.cost.phases import Phase, layer_of, phase_of
from hloscope.analyses.memory.liveness import Liveness
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
_PARAMETER_WORDS = frozenset({"params", "param", "parameters", "weights", "model", "variables"})
_OPTIMIZER_WORDS = frozenset({
    "opt_state", "optimizer", "opt", "mu", "nu", "master", "momentum", "velocity", "adam",
    "exp_avg", "exp_avg_sq", "accumulator", "step", "count", "ema", "slots",
})
_INPUT_WORDS = frozenset({"batch", "inputs", "input", "data", "tokens", "targets", "labels",
                          "rng", "key", "x", "y"})
_PATH_SPLIT = re.compile(r"[^A-Za-z0-9]+")
_NUMBER = re.compile(r"\d+")
_LAYER_WORDS = frozenset({"layers", "layer", "blocks", "block", "h"})


def path_components(text: str) -> list[str]:
    """`state.params['layers'][0]['w']` or `state_params__layers___0___w__.1` -> components."""
    text = re.sub(r"\.\d+$", "", text)  # XLA's uniquifying suffix
    return [part for part in _PATH_SPLIT.split(text) if part]


def argument_category(path: str) -> Category:
    for component in path_components(path):
        word = component.lower()
        if word in _PARAMETER_WORDS:
            return Category.PARAMETER
        if word in _OPTIMIZER_WORDS:
            return Category.OPTIMIZER_STATE
        if word in _INPUT_WORDS:
            return Category.INPUT
    return Category.PARAMETER


def argument_layer(path: str) -> str | None:
    """`layer_0` for a path with a `layers`/`blocks` component followed by a number."""
    components = path_components(path)
    for word, following in zip(components, components[1:], strict=False):
        if word.lower() in _LAYER_WORDS and _NUMBER.fullmatch(following):
            return f"layer_{following}"
    return layer_of(path)


def argument_path(parameter: Instruction) -> str:
    """The pytree path JAX gave an argument: its op_name, else its name."""
    return parameter.op_name or parameter.name


class Classifier:
    """Categories, phases and layers of a program's buffers."""

    def __init__(self, liveness: Liveness) -> None:
        self.liveness = liveness
        self.program = liveness.program
        names = resolve_names(self.program)
        self.namers, self.op_names = names.namer, names.op_name
        self.phases = instruction_phases(self.program, self.op_names)
        self._paths: dict[Instruction, str] = {}
        self._argument_of_buffer = self._arguments_by_buffer()
        self._outputs = {id(v) for v in liveness.values if self._is_output(v)}

    def category(self, value: Value) -> Category:
        argument = self._argument_of_buffer.get(self.liveness.buffers.find(value.id))
        if argument is not None:
            return argument_category(self.argument_path(argument))
        if value.instruction.opcode == "constant":
            return Category.CONSTANT
        if id(value) in self._outputs:
            return Category.OUTPUT
        made = self.phase(value.instruction)
        read = {self.phase(user) for user, _, _ in value.uses}
        if made is Phase.FORWARD and read & {Phase.BACKWARD, Phase.RECOMPUTE}:
            return Category.SAVED_ACTIVATION
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

    def _is_output(self, value: Value) -> bool:
        root = self.program.root.root
        return any(instruction is root for instruction, _ in value.positions)


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
