"""libtpu's buffer-sharing hint, read from an instruction's `backend_config`.

HloDataflowAnalysis::CanShareOperandBufferWithUser (xla/hlo/analysis/hlo_dataflow_analysis.cc)
asks the backend first (its `can_share_buffer` hook, AliasInfo::MayAlias) and takes a yes from it
before its own generic fusion rules. libtpu states its answer in the optimized HLO:
`"aliasing_operands":{"lists":[{"indices":["i","j"]}, ...]}` in an instruction's backend_config,
where i < the operand count names operand i and j names output j - (operand count) (the top-level
tuple element, or the whole output when it is not a tuple). Each listed output may be made in
its operand's buffer: in libtpu's buffer assignments the output sits at its operand's offset,
e.g. a multi-output convolution fusion's output {4} over the convolution gradient it reads
(docs/memory.md, "Buffer sharing").
"""
from __future__ import annotations

from hloscope.analyses.memory.liveness.values import Index
from hloscope.model.instruction import Instruction


def hinted_pairs(instruction: Instruction) -> frozenset[tuple[int, Index]]:
    """(operand number, output index) pairs the backend_config's aliasing_operands lists."""
    if instruction.raw_attribute("backend_config") is None:
        return frozenset()
    config = instruction.backend_config
    aliasing = config.get("aliasing_operands") if isinstance(config, dict) else None
    lists = aliasing.get("lists") if isinstance(aliasing, dict) else None
    if not isinstance(lists, list):
        return frozenset()
    count = len(instruction.operands)
    pairs: set[tuple[int, Index]] = set()
    for entry in lists:
        indices = _numbers(entry.get("indices") if isinstance(entry, dict) else None)
        if len(indices) != 2 or not 0 <= indices[0] < count <= indices[1]:
            continue
        output = indices[1] - count
        if instruction.shape.is_tuple:
            pairs.add((indices[0], (output,)))
        elif output == 0:
            pairs.add((indices[0], ()))
    return frozenset(pairs)


def _numbers(values: object) -> list[int]:
    if not isinstance(values, list):
        return []
    try:
        return [int(v) for v in values]
    except (TypeError, ValueError):
        return []
