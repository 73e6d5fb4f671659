"""The most bytes one layer's backward pass holds at once: what a stronger remat policy keeps.

Under remat the backward pass of a layer recomputes the residuals it reads, so at its worst
moment it holds its temporaries *and* the residuals still to be read in that layer. In a
program that saves them (the one diagnosed), those residuals are slices of the layer scan's
stacked `[layers, ...]` saved buffers, which the backward loop's body reads through
`get-tuple-element`s of its carried state. So, at every moment t of the backward and recompute
phases,

    W(t) = temporaries live at t + sum over the stacked saved buffers the body running at t
           still reads at or after t of (their bytes / layers)

and the working set is the largest W(t). Programs whose layers are not scanned have no such
values: W is the temporaries alone.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from hloscope.analyses.memory.liveness import Liveness
from hloscope.analyses.memory.liveness.categories import Category, Classifier
from hloscope.analyses.memory.liveness.peak import live_at
from hloscope.analyses.memory.liveness.program import FlatProgram
from hloscope.analyses.memory.liveness.values import Value
from hloscope.model.instruction import Instruction

BACKWARD_PHASES = frozenset({"backward", "recompute"})


@dataclass(frozen=True, slots=True)
class LayerWorkingSet:
    time: int
    instruction: str
    temporary_bytes: int
    in_flight_saved_bytes: int  # one layer's share of the stacked residuals still to be read

    @property
    def total_bytes(self) -> int:
        return self.temporary_bytes + self.in_flight_saved_bytes

    def to_dict(self) -> dict:
        return {**asdict(self), "total_bytes": self.total_bytes}


def layer_working_set(liveness: Liveness, classifier: Classifier,
                      on_device: Callable[[Value], bool], layers: int) -> LayerWorkingSet | None:
    """The largest W(t) over the backward and recompute phases (module docstring); None when
    the program has no backward pass."""
    program = liveness.program
    best: LayerWorkingSet | None = None
    for time, instruction in enumerate(program.sequence):
        if classifier.phase(instruction).value not in BACKWARD_PHASES:
            continue
        temporaries, saved_shapes = 0, set()
        for value in live_at(liveness, time, keep=on_device):
            category = classifier.category(value)
            if category is Category.TEMPORARY:
                temporaries += value.bytes
            elif category is Category.SAVED_ACTIVATION and value.shape.dimensions[:1] == (layers,):
                saved_shapes.add(value.shape.dimensions)
        in_flight = _still_read(program, instruction, time, layers, saved_shapes)
        if best is None or temporaries + in_flight > best.total_bytes:
            best = LayerWorkingSet(time, instruction.name, temporaries, in_flight)
    return best


def _still_read(program: FlatProgram, instruction: Instruction, time: int, layers: int,
                saved_shapes: set[tuple[int, ...]]) -> int:
    """One layer's share of the stacked saved buffers that the loop body running `instruction`
    reads (a get-tuple-element of the body's parameter) at or after `time`."""
    if layers <= 1 or not saved_shapes:
        return 0
    body = program.computation_of.get(instruction)
    if body is None:
        return 0
    share, seen = 0, set()
    for element in body.instructions:
        if element.opcode != "get-tuple-element" or element.tuple_index in seen:
            continue
        operands = program.operands.get(element, [])
        if not operands or operands[0].opcode != "parameter":
            continue
        if element.shape.dimensions not in saved_shapes:
            continue
        if any(program.time.get(user, -1) >= time for user, _ in program.users.get(element, [])):
            seen.add(element.tuple_index)
            share += element.shape.byte_size // layers
    return share
