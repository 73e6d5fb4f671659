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
_TRANSCENDENTAL = {
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "cosine", "cosh", "erf",
    "exponential", "exponential-minus-one", "log", "log-plus-one", "logistic", "power", "rsqrt",
    "sine", "sinh", "sqrt", "tan", "tanh",
}
_ELEMENTWISE = _TRANSCENDENTAL | {
    "abs", "add", "and", "ceil", "clamp", "compare", "complex", "convert", "count-leading-zeros",
    "divide", "floor", "imag", "is-finite", "map", "maximum", "minimum", "mulhi", "multiply",
    "negate", "not", "or", "popcnt", "real", "reduce-precision", "remainder",
    "round-nearest-afz", "round-nearest-even", "select", "shift-left", "shift-right-arithmetic",
    "shift-right-logical", "sign", "stochastic-convert", "subtract", "xor", "bitcast-convert",
    "rng", "rng-bit-generator", "batch-norm-grad", "batch-norm-inference", "batch-norm-training",
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
_CONTROL_FLOW = {"while", "conditional", "call", "async-start", "async-update", "async-done"}
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

# Opcodes of the XLA this project is pinned to (jaxlib 0.10.2) plus newer ones seen in real text.
KNOWN_OPCODES = frozenset(_CATEGORY_OF)
TRANSCENDENTAL_OPCODES = frozenset(_TRANSCENDENTAL)


def category_of(opcode: str) -> OpCategory:
    return _CATEGORY_OF.get(opcode, OpCategory.UNKNOWN)


def is_known(opcode: str) -> bool:
    return opcode in _CATEGORY_OF
