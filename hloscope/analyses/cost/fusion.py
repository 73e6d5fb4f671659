"""Bytes accessed by a fusion, as XLA's HloCostAnalysis::HandleFusion counts them.

A fusion touches memory only at its boundary: it writes its outputs (an output produced by a
dynamic-update-slice writes only the update), reads constants of more than one element, and reads
each parameter once, except where a parameter is only sliced (the slice is read), broadcast or
reshaped (counted once per such use) or feeds a nested fusion (read as that fusion reads it).
"""
from __future__ import annotations

from collections.abc import Callable

from hloscope.analyses.cost.graph import ComputationGraph
from hloscope.analyses.cost.sizes import xla_size
from hloscope.model.instruction import Instruction
from hloscope.model.shape import Shape

GraphOf = Callable[[str], ComputationGraph]


def fusion_bytes(shape: Shape, fused: ComputationGraph, graph_of: GraphOf,
                 padded: bool = False) -> int:
    """`padded`: tiled layouts count whole tiles (sizes.py)."""
    reader = _ParameterReads(graph_of, padded)
    total = _output_bytes(shape, fused, padded) + _constant_bytes(fused, padded)
    for parameter in fused.computation.instructions:
        if parameter.opcode == "parameter":
            total += reader.parameter(parameter, fused)
    return total


def _output_bytes(shape: Shape, fused: ComputationGraph, padded: bool) -> int:
    root = fused.root
    total = 0
    for index, subshape in _array_subshapes(shape, ()):
        producer = root
        if len(index) == 1 and root.opcode == "tuple":
            producer = fused.operands(root)[index[0]]
        if producer.opcode == "dynamic-update-slice":
            total += xla_size(fused.operands(producer)[1].shape, padded)
        else:
            total += xla_size(subshape, padded)
    return total


def _array_subshapes(shape: Shape, index: tuple[int, ...]) -> list[tuple[tuple[int, ...], Shape]]:
    if not shape.is_tuple:
        return [(index, shape)] if shape.is_array else []
    found = []
    for i, sub in enumerate(shape.tuple_shapes):
        found.extend(_array_subshapes(sub, (*index, i)))
    return found


def _constant_bytes(fused: ComputationGraph, padded: bool) -> int:
    return sum(xla_size(i.shape, padded) for i in fused.computation.instructions
               if i.opcode == "constant" and not i.shape.is_tuple and i.shape.element_count > 1)


class _ParameterReads:
    """XLA's FusionParameterReadBytes, including its treatment of nested fusions."""

    def __init__(self, graph_of: GraphOf, padded: bool) -> None:
        self.graph_of = graph_of
        self.padded = padded

    def size(self, shape: Shape) -> int:
        return xla_size(shape, self.padded)

    def parameter(self, parameter: Instruction, fused: ComputationGraph) -> int:
        shape = parameter.shape
        if not shape.is_tuple:
            return self.read(parameter, fused)
        return sum(self.read(self._element(parameter, index, fused), fused)
                   for index, _ in shape.leaves())

    @staticmethod
    def _element(parameter: Instruction, index: tuple[int, ...],
                 fused: ComputationGraph) -> Instruction:
        """The get-tuple-element chain reaching a leaf (as far as it exists)."""
        current = parameter
        for position in index:
            for user in fused.users(current):
                if user.opcode == "get-tuple-element" and user.tuple_index == position:
                    current = user
                    break
        return current

    def read(self, value: Instruction, fused: ComputationGraph) -> int:
        size = 0
        seen_plain_user = False
        own_size = self.size(value.shape)
        for user in fused.users(value):
            opcode = user.opcode
            if opcode == "fusion":
                size += self._nested(value, user, fused)
            elif opcode == "slice" or (
                    opcode == "dynamic-slice" and fused.operands(user)[0] is value):
                size += self.size(user.shape)
            elif opcode == "dynamic-update-slice" and fused.operands(user)[0] is value:
                continue
            elif opcode in ("broadcast", "reshape"):
                size += own_size
            elif not seen_plain_user:
                seen_plain_user = True
                size += own_size
        return size

    def _nested(self, value: Instruction, fusion: Instruction, fused: ComputationGraph) -> int:
        inner = self.graph_of(fusion.called_computation("calls") or "")
        parameters = _parameters_by_number(inner)
        root = inner.root
        size = 0
        for index, operand in enumerate(fused.operands(fusion)):
            if operand is not value:
                continue
            inner_parameter = parameters[index]
            simple = not root.operands or inner.operands(root)[0] is inner_parameter
            size += self._nested_operand(fusion, inner_parameter, inner, fused, simple)
        return size

    def _nested_operand(self, fusion: Instruction, inner_parameter: Instruction,
                        inner: ComputationGraph, fused: ComputationGraph, simple: bool) -> int:
        size = 0
        seen_plain_user = False
        fusion_size = self.size(fusion.shape)
        for user in fused.users(fusion):
            opcode = user.opcode
            if simple and opcode == "slice":
                size += self.size(user.shape)
            elif simple and opcode == "dynamic-slice":
                if fused.operands(user)[0] is fusion:
                    size += self.size(user.shape)
                elif not seen_plain_user:
                    seen_plain_user = True
                    size += fusion_size
            elif simple and opcode == "dynamic-update-slice":
                if fused.operands(user)[0] is not fusion and not seen_plain_user:
                    seen_plain_user = True
                    size += fusion_size
            elif not seen_plain_user:
                seen_plain_user = True
                size += self.read(inner_parameter, inner)
        return size


def _parameters_by_number(graph: ComputationGraph) -> dict[int, Instruction]:
    return {i.parameter_number: i for i in graph.computation.instructions
            if i.opcode == "parameter"}
