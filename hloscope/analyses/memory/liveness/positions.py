"""Where each value is held (positions) and which instructions read it (uses), as XLA's HloValue.

A value's positions are every (instruction, index) whose tree holds it, its defining position
first. A use is an (instruction, operand number, index) reading a position, except that
get-tuple-element and copy read only the top-level table of a tuple operand, and tuple and domain
read nothing (they pass values through). An async-done reads all of its start's values: the
operands of an asynchronous op stay live until it is done (as libtpu's live-range dumps show).
A computation's root counts as a use of every value it returns.
"""
from __future__ import annotations

from hloscope.analyses.memory.liveness.dataflow import Dataflow
from hloscope.analyses.memory.liveness.phis import PhiGraph
from hloscope.analyses.memory.liveness.program import FlatProgram
from hloscope.analyses.memory.liveness.values import Index, TupleNode, Value, ValueTree


def settle(dataflow: Dataflow) -> tuple[list[Value], PhiGraph]:
    """Simplifies phis, records positions and uses; returns the values that remain (by id) and
    the phi graph that maps a replaced phi to its value."""
    graph = PhiGraph(dataflow.phis)
    graph.optimize()
    program = dataflow.program
    for instruction in program.sequence:
        _record_positions(instruction, dataflow.trees[instruction], graph, ())
    alive = [v for v in dataflow.values if not v.is_phi or graph.resolve(v) is v]
    for value in alive:
        value.uses = _uses(program, value)
    return alive, graph


def _record_positions(instruction, tree: ValueTree, graph: PhiGraph, index: Index) -> None:
    if isinstance(tree, TupleNode):
        _record(instruction, graph.resolve(tree.value), index)
        for i, child in enumerate(tree.children):
            _record_positions(instruction, child, graph, (*index, i))
    else:
        _record(instruction, graph.resolve(tree), index)


def _record(instruction, value: Value, index: Index) -> None:
    if value.instruction is not instruction:
        value.positions.append((instruction, index))


def _may_use(index: Index, user_opcode: str) -> bool:
    if user_opcode in ("get-tuple-element", "copy"):
        return not index
    return user_opcode not in ("tuple", "domain")


def _uses(program: FlatProgram, value: Value) -> list[tuple]:
    roots = {instruction for instruction, _ in value.positions if program.is_root(instruction)}
    uses = []
    for instruction, index in value.positions:
        for user, operand_number in program.users.get(instruction, ()):
            if _may_use(index, user.opcode) or user in roots:
                uses.append((user, operand_number, index))
    return uses
