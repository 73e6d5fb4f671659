"""Custom-calls: XLA's cost analysis cannot see inside them; hloscope estimates what it can.

XLA counts every custom-call as -1 FLOPs and -1 bytes ("unknown"). hloscope instead
- costs GEMM custom-calls (cuBLAS, cuBLASLt, hipBLAS, oneDNN matmuls) like a dot, from the
  `dot_dimension_numbers` in their backend_config and the operand and result shapes;
- treats custom-calls known to do no arithmetic (sharding annotations, host offload moves,
  dynamic-shape padding, ...) as data movement: bytes = operands + output, no FLOPs;
- costs every other target the same way but lists it as *unattributed*: its FLOPs are unknown,
  never silently zero.
"""
from __future__ import annotations

import math

from hloscope.analyses.cost.convolution import FMA_FLOPS
from hloscope.analyses.cost.rules import Site
from hloscope.analyses.cost.sizes import first_array
from hloscope.analyses.cost.vector import Cost

GEMM_TARGETS = frozenset({
    "__cublas$gemm", "__cublas$lt$matmul", "__cublas$lt$matmul$f8", "__hipblas$gemm",
    "__hipblas$lt$matmul", "__onednn$matmul", "__onednn$fusion",
})
NO_ARITHMETIC_TARGETS = frozenset({
    "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "LayoutConstraint",
    "annotate_device_placement", "MoveToHost", "MoveToDevice", "PadToStatic", "SliceToDynamic",
    "SetBound", "AssumeGatherIndicesInBound", "AllocateBuffer", "ConcatBitcast", "Pin",
    "Unpin", "CreateBuffer", "X64Combine", "X64SplitLow", "X64SplitHigh",
})
XLA_UNKNOWN = Cost(flops=-1, bytes_accessed=-1)


def custom_call_cost(site: Site) -> tuple[Cost, bool]:
    """(cost, attributed): `attributed` is False when the FLOPs are unknown."""
    target = site.instruction.custom_call_target or ""
    bytes_accessed = site.default_bytes()
    if target in GEMM_TARGETS:
        flops = gemm_flops(site)
        if flops is not None:
            return Cost(flops=flops, bytes_accessed=bytes_accessed), True
    return Cost(bytes_accessed=bytes_accessed), target in NO_ARITHMETIC_TARGETS


def gemm_flops(site: Site) -> int | None:
    numbers = _dot_dimension_numbers(site.instruction.backend_config)
    if numbers is None or not site.operand_shapes:
        return None
    try:
        contracting = [int(d) for d in numbers.get("lhs_contracting_dimensions", [])]
        lhs = site.operand_shapes[0]
        width = math.prod(lhs.dimensions[d] for d in contracting)
    except (TypeError, ValueError, IndexError):
        return None
    return FMA_FLOPS * first_array(site.shape).element_count * width


def _dot_dimension_numbers(config: object) -> dict | None:
    """`dot_dimension_numbers` at the top of a GEMM backend_config or one level down."""
    if not isinstance(config, dict):
        return None
    numbers = config.get("dot_dimension_numbers")
    if isinstance(numbers, dict):
        return numbers
    for value in config.values():
        if isinstance(value, dict) and isinstance(value.get("dot_dimension_numbers"), dict):
            return value["dot_dimension_numbers"]
    return None
