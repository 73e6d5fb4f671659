"""XLA's HLO opcodes (xla/hlo/ir/hlo_opcode.h) and the categories hloscope groups them into.

An opcode missing from this list (a newer XLA's, say) is still parsed and kept as a generic
instruction; analyses list it as unknown rather than guess what it does.
"""
from __future__ import annotations

from enum import StrEnum


class OpCategory(StrEnum):
    MATMUL = "matmul/conv"
    ELEMENTWISE = "elementwise"
    REDUCTION = "reduction"
    DATA_MOVEMENT = "data movement"
    COLLECTIVE = "collective"
    CONTROL_FLOW = "control flow"
    CUSTOM_CALL = "custom-call"
    FUSION = "fusion"
    OTHER = "other"
    UNKNOWN = "unknown"


_MATMUL = {"dot", "convolution", "ragged-dot", "scaled-dot", "triangular-solve", "cholesky",
           "fft"}
# XLA's HloCostAnalysis::HandleElementwiseOp (xla/service/hlo_cost_analysis.cc) counts one
# transcendental per output element for these opcodes and one FLOP for every other elementwise op.
# (acos, asin, atan, cosh, sinh and their kin are CHLO ops, decomposed before HLO: no HLO opcode.)
TRANSCENDENTAL = frozenset({
    "atan2", "cbrt", "cosine", "erf", "exponential", "exponential-minus-one", "log",
    "log-plus-one", "logistic", "power", "rsqrt", "sine", "sqrt", "tan", "tanh",
})
# The opcodes XLA's cost analysis handles as elementwise: one FLOP or transcendental an element.
ELEMENTWISE_ARITHMETIC = TRANSCENDENTAL | frozenset({
    "abs", "add", "and", "bitcast-convert", "ceil", "clamp", "compare", "complex", "convert",
    "count-leading-zeros", "divide", "floor", "imag", "is-finite", "maximum", "minimum",
    "multiply", "negate", "not", "or", "popcnt", "real", "reduce-precision", "remainder",
    "round-nearest-afz", "round-nearest-even", "select", "shift-left", "shift-right-arithmetic",
    "shift-right-logical", "sign", "stochastic-convert", "subtract", "xor",
})
_ELEMENTWISE = ELEMENTWISE_ARITHMETIC | {
    "map", "mulhi", "rng", "rng-bit-generator", "batch-norm-grad", "batch-norm-inference",
    "batch-norm-training",
}
_REDUCTION = {"reduce", "reduce-window", "select-and-scatter", "sort", "topk", "scan"}
_DATA_MOVEMENT = {
    "bitcast", "broadcast", "concatenate", "copy", "copy-start", "copy-done", "dynamic-reshape",
    "dynamic-slice", "dynamic-update-slice", "gather", "iota", "pad", "reshape", "reverse",
    "scatter", "slice", "transpose", "shuffle", "get-dimension-size", "set-dimension-size",
}
_COLLECTIVE = {
    "all-gather", "all-gather-start", "all-gather-done", "all-reduce", "all-reduce-start",
    "all-reduce-done", "all-to-all", "collective-broadcast", "collective-permute",
    "collective-permute-start", "collective-permute-done", "ragged-all-to-all", "reduce-scatter",
    "send", "send-done", "recv", "recv-done", "collective-reduce",
}

# The opcodes that run other computations as a part of the program, from the narrowest set up.
# (Opcodes that apply a computation to elements -- reduce, sort, map, scatter -- are not callers.)
# `while`, `conditional` and `call` run their computations in place: a profiler event of one
# encloses the events of what it runs.
SYNC_CALLERS = frozenset({"while", "conditional", "call"})
# XLA's HloLiveRange flattens these into the schedule (xla/hlo/utils/hlo_live_range.cc): their
# computations' values are buffers of their own, numbered before the caller.
SCHEDULED_CALLERS = SYNC_CALLERS | {"async-start"}
# A fusion's computation is also part of the program, run inside the fusion's buffers: what each
# of its instructions costs is charged to the fusion's caller.
PROGRAM_CALLERS = SCHEDULED_CALLERS | {"fusion"}
ASYNC = frozenset({"async-start", "async-update", "async-done"})
_CONTROL_FLOW = SCHEDULED_CALLERS | ASYNC
_OTHER = {
    "parameter", "constant", "tuple", "get-tuple-element", "add-dependency", "after-all",
    "domain", "infeed", "outfeed", "opt-barrier", "partition-id", "replica-id",
    "rng-get-and-update-state",
}

_CATEGORY_OF: dict[str, OpCategory] = {}
for _names, _category in (
    (_MATMUL, OpCategory.MATMUL), (_ELEMENTWISE, OpCategory.ELEMENTWISE),
    (_REDUCTION, OpCategory.REDUCTION), (_DATA_MOVEMENT, OpCategory.DATA_MOVEMENT),
    (_COLLECTIVE, OpCategory.COLLECTIVE), (_CONTROL_FLOW, OpCategory.CONTROL_FLOW),
    ({"custom-call"}, OpCategory.CUSTOM_CALL), ({"fusion"}, OpCategory.FUSION),
    (_OTHER, OpCategory.OTHER),
):
    for _name in _names:
        _CATEGORY_OF[_name] = _category


def category_of(opcode: str) -> OpCategory:
    """The category of an opcode of the XLA this project is pinned to (jaxlib 0.10.2) or of a
    newer one seen in real text; UNKNOWN for any other."""
    return _CATEGORY_OF.get(opcode, OpCategory.UNKNOWN)


def is_known(opcode: str) -> bool:
    return opcode in _CATEGORY_OF
