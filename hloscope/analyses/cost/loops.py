"""Trip counts of while loops: from XLA's annotation, else from the loop's own arithmetic.

1. `backend_config={"known_trip_count":{"n":"4"}}`, which XLA's CPU and GPU pipelines add to the
   loops they analysed (every `lax.scan` and `fori_loop` with static bounds).
2. Otherwise the loop is matched against the counted-loop pattern: the condition's root compares
   an element of the loop state (a get-tuple-element of the parameter) with a constant; the loop's
   initial tuple sets that element to a constant; the body's root tuple sets it to itself plus (or
   minus) a constant. Fusions wrapping the compare or the increment are looked through.
3. Otherwise the trip count is unknown: the loop body is counted once and the loop is reported.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hloscope.analyses.cost.graph import ComputationGraph
from hloscope.model.instruction import Instruction

GraphOf = Callable[[str], ComputationGraph | None]

_FLIPPED = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "EQ": "EQ", "NE": "NE"}


@dataclass(frozen=True, slots=True)
class TripCount:
    count: int
    source: str  # "backend_config", "inferred" or "unknown"

    @property
    def known(self) -> bool:
        return self.source != "unknown"


def trip_count(loop: Instruction, caller: ComputationGraph, graph_of: GraphOf) -> TripCount:
    annotated = annotated_trip_count(loop)
    if annotated is not None:
        return TripCount(annotated, "backend_config")
    inferred = _infer(loop, caller, graph_of)
    if inferred is not None:
        return TripCount(inferred, "inferred")
    return TripCount(1, "unknown")


def annotated_trip_count(loop: Instruction) -> int | None:
    if "known_trip_count" not in loop.text:
        return None
    config = loop.backend_config
    if not isinstance(config, dict):
        return None
    known = config.get("known_trip_count")
    try:
        return int(known["n"]) if isinstance(known, dict) else None
    except (KeyError, TypeError, ValueError):
        return None


def _infer(loop: Instruction, caller: ComputationGraph, graph_of: GraphOf) -> int | None:
    condition = graph_of(loop.called_computation("condition") or "")
    body = graph_of(loop.called_computation("body") or "")
    if condition is None or body is None:
        return None
    comparison = _comparison(condition, graph_of)
    if comparison is None:
        return None
    index, direction, limit = comparison
    start = _initial_value(loop, caller, index)
    step = _step(body, index, graph_of)
    if start is None or step is None:
        return None
    return _count(start, step, direction, limit)


def _comparison(condition: ComputationGraph, graph_of: GraphOf) -> tuple[int, str, int] | None:
    """(state index, direction as `state DIR limit`, limit) of the loop condition."""
    compare, operands = _operation(condition.root, condition, graph_of)
    if compare.opcode != "compare" or len(operands) != 2:
        return None
    direction = (compare.raw_attribute("direction") or "").strip()
    lhs, rhs = operands
    left, right = _state_index(lhs, condition), _constant(rhs)
    if left is not None and right is not None:
        return left, direction, right
    left_constant, right_index = _constant(lhs), _state_index(rhs, condition)
    if left_constant is not None and right_index is not None and direction in _FLIPPED:
        return right_index, _FLIPPED[direction], left_constant
    return None


def _operation(value: Instruction, graph: ComputationGraph,
               graph_of: GraphOf) -> tuple[Instruction, list[Instruction]]:
    """The operation computing `value` and its operands, looking through a fusion: the fused
    root's parameters are replaced by the fusion's operands."""
    if value.opcode != "fusion":
        return value, graph.operands(value)
    fused = graph_of(value.called_computation("calls") or "")
    if fused is None:
        return value, graph.operands(value)
    outer = graph.operands(value)
    inner_root = fused.root
    resolved = []
    for operand in fused.operands(inner_root):
        if operand.opcode == "parameter" and operand.parameter_number < len(outer):
            resolved.append(outer[operand.parameter_number])
        else:
            resolved.append(operand)
    return inner_root, resolved


def _state_index(value: Instruction, graph: ComputationGraph) -> int | None:
    if graph.by_name.get(value.name) is not value:
        return None
    value = _through_copies(value, graph)
    if value.opcode != "get-tuple-element":
        return None
    source = graph.operands(value)[0]
    return value.tuple_index if source.opcode == "parameter" else None


def _constant(value: Instruction) -> int | None:
    if value.opcode != "constant" or value.shape.dimensions:
        return None
    try:
        return int(value.operand_text.strip())
    except ValueError:
        return None


def _initial_value(loop: Instruction, caller: ComputationGraph, index: int) -> int | None:
    initial = caller.operands(loop)[0]
    if initial.opcode != "tuple":
        return None
    elements = caller.operands(initial)
    if index >= len(elements):
        return None
    return _constant(_through_copies(elements[index], caller))


def _through_copies(value: Instruction, graph: ComputationGraph) -> Instruction:
    """libtpu moves loop counters between memory spaces: copy(constant(0)), copy(gte(param))."""
    while value.opcode in _VALUE_PRESERVING and graph.operands(value):
        value = graph.operands(value)[0]
    return value


_VALUE_PRESERVING = ("copy", "bitcast", "reshape")


def _step(body: ComputationGraph, index: int, graph_of: GraphOf) -> int | None:
    root = body.root
    if root.opcode != "tuple" or index >= len(root.operands):
        return None
    update, operands = _operation(_through_copies(body.operands(root)[index], body), body,
                                  graph_of)
    if update.opcode not in ("add", "subtract") or len(operands) != 2:
        return None
    lhs, rhs = operands
    if _state_index(lhs, body) != index:
        if update.opcode == "add" and _state_index(rhs, body) == index:
            lhs, rhs = rhs, lhs
        else:
            return None
    step = _constant(rhs)
    if step is None:
        return None
    return step if update.opcode == "add" else -step


def _count(start: int, step: int, direction: str, limit: int) -> int | None:
    if step == 0:
        return None
    if direction in ("LT", "LE") and step > 0:
        end = limit + (1 if direction == "LE" else 0)
        return max(0, -(-(end - start) // step))
    if direction in ("GT", "GE") and step < 0:
        end = limit - (1 if direction == "GE" else 0)
        return max(0, -(-(start - end) // -step))
    if direction == "NE" and (limit - start) % step == 0 and (limit - start) // step >= 0:
        return (limit - start) // step
    return None
