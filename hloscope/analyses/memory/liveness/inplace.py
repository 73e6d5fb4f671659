"""Which operands an instruction updates in place (XLA's AliasInfo::GetInPlaceInputOutputPairs).

An in-place pair ((operand number, operand index), output index) says the output at that index
must share the operand's buffer: dynamic-update-slice (operand 0), scatter (its operands),
all-reduce-start (each operand its output), an in-place collective-permute (operand 1),
ragged-all-to-all (operand 1), set-dimension-size, the pairs a custom-call, fusion or async-start
declares in `output_to_operand_aliasing`, and a fusion whose root (through tuples, get-tuple-
elements and bitcasts) is such an op on one of the fusion's parameters.
"""
from __future__ import annotations

import re

from hloscope.analyses.memory.liveness.program import fused_computation
from hloscope.analyses.memory.liveness.values import Index
from hloscope.model import attributes as attr
from hloscope.model.instruction import Instruction
from hloscope.model.module import Computation, HloModule

Pair = tuple[tuple[int, Index], Index]
_ALIASING = re.compile(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{([\d,\s]*)\}")
_NO_OP_INPUTS = ("bitcast", "transpose", "reshape")
_IN_PLACE_OPCODES = frozenset({
    "dynamic-update-slice", "set-dimension-size", "scatter", "all-reduce-start",
    "collective-permute", "collective-permute-start", "ragged-all-to-all", "fusion",
    "custom-call", "async-start"})
_DECLARED = "output_to_operand_aliasing="


class InPlaceRules:
    """In-place pairs per instruction, with fused computations resolved once."""

    def __init__(self, module: HloModule) -> None:
        self.module = module
        self._fused: dict[str, dict[str, Instruction]] = {}
        self._cache: dict[Instruction, list[Pair]] = {}
        self._fusions: dict[tuple[str, str], list[Pair]] = {}

    def pairs(self, instruction: Instruction) -> list[Pair]:
        if instruction.opcode not in _IN_PLACE_OPCODES:
            return []
        found = self._cache.get(instruction)
        if found is None:
            found = self._pairs(instruction)
            self._cache[instruction] = found
        return found

    def _pairs(self, instruction: Instruction) -> list[Pair]:
        opcode = instruction.opcode
        if opcode == "dynamic-update-slice" or opcode == "set-dimension-size":
            return [((0, ()), ())]
        if opcode == "scatter":
            return _each_operand((len(instruction.operands) - 1) // 2)
        if opcode == "all-reduce-start":
            config = instruction.raw_attribute("backend_config") or ""
            return [] if "nvshmem" in config.lower() else _each_operand(
                len(instruction.operands))
        if opcode in ("collective-permute", "collective-permute-start"):
            return _collective_permute(instruction, opcode)
        if opcode == "ragged-all-to-all":
            return [((1, ()), ())]
        declared = _declared(instruction)
        if opcode == "fusion":
            return self._fusion_pairs(instruction) + declared
        return declared if opcode in ("custom-call", "async-start") else []

    # --- fusions ---------------------------------------------------------------------------
    def _fusion_pairs(self, fusion: Instruction) -> list[Pair]:
        name = fused_computation(fusion)
        if name is None:
            return []
        key = (name, fusion.shape_text)
        found = self._fusions.get(key)
        if found is None:
            found = self._fusions[key] = self._fused_pairs(fusion, name)
        return found

    def _fused_pairs(self, fusion: Instruction, name: str) -> list[Pair]:
        computation = self.module.computation(name)
        scope = self._scope(computation)
        root = computation.root
        pairs = []
        for index, _ in fusion.shape.leaves():
            pair = self._fusion_output_pair(root, index, scope)
            if pair is not None:
                pairs.append((pair, index))
        return pairs

    def _fusion_output_pair(self, root: Instruction, index: Index,
                            scope: dict[str, Instruction]) -> tuple[int, Index] | None:
        source, source_index = _follow_tuples(root, index, scope)
        while source.opcode == "bitcast" and not source_index:
            source = scope[source.operands[0]]
        for (operand_number, operand_index), output_index in self._pairs(source):
            if output_index != source_index:
                continue
            operand = scope.get(source.operands[operand_number])
            if operand is None:
                return None
            operand, operand_index = _follow_tuples(operand, operand_index, scope)
            operand, operand_index = self._through_nested(operand, operand_index, scope)
            while operand.opcode in _NO_OP_INPUTS:
                operand = scope[operand.operands[0]]
            if operand.opcode == "parameter":
                return operand.parameter_number, operand_index
            return None
        return None

    def _through_nested(self, operand: Instruction, index: Index,
                        scope: dict[str, Instruction]) -> tuple[Instruction, Index]:
        if operand.opcode != "fusion":
            return operand, index
        for (number, nested_index), output_index in self._fusion_pairs(operand):
            if output_index == index:
                return _follow_tuples(scope[operand.operands[number]], nested_index, scope)
        return operand, index

    def _scope(self, computation: Computation) -> dict[str, Instruction]:
        scope = self._fused.get(computation.name)
        if scope is None:
            scope = {i.name: i for i in computation.instructions}
            self._fused[computation.name] = scope
        return scope


def _each_operand(count: int) -> list[Pair]:
    if count == 1:
        return [((0, ()), ())]
    return [((i, ()), (i,)) for i in range(count)]


def _collective_permute(instruction: Instruction, opcode: str) -> list[Pair]:
    if len(instruction.operands) != 4:
        return []
    prefix: Index = (1,) if opcode == "collective-permute-start" else ()
    pairs: list[Pair] = [((1, ()), prefix)]
    shape = instruction.shape.subshape(prefix) if prefix else instruction.shape
    if shape.is_tuple:
        pairs += [((1, (i,)), (*prefix, i)) for i in range(len(shape.tuple_shapes))]
    return pairs


def _declared(instruction: Instruction) -> list[Pair]:
    """`output_to_operand_aliasing={{0}: (1, {}), ...}`."""
    if _DECLARED not in instruction.text:
        return []
    raw = instruction.raw_attribute("output_to_operand_aliasing")
    if not raw:
        return []
    return [((int(m.group(2)), attr.int_list("{" + m.group(3) + "}")),
             attr.int_list("{" + m.group(1) + "}")) for m in _ALIASING.finditer(raw)]


def _follow_tuples(instruction: Instruction, index: Index,
                   scope: dict[str, Instruction]) -> tuple[Instruction, Index]:
    """XLA's FollowTupleIndirection: through tuples (by index), then get-tuple-elements."""
    while instruction.opcode == "tuple" and index:
        instruction, index = scope[instruction.operands[index[0]]], index[1:]
    while instruction.opcode == "get-tuple-element":
        index = (instruction.tuple_index or 0, *index)
        instruction = scope[instruction.operands[0]]
    return instruction, index
