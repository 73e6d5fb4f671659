"""What one top-level op of a scheduled program costs in time, from its own FLOPs, bytes and shapes.

Each op that runs on the device's compute stream gets

    seconds = fixed cost + max(matmul time, vector time, memory time)

- **matmul time**: the FLOPs of its dots and convolutions (and closed-form kernels such as
  splash attention) over the peak, the calibrated matmul efficiency and the *shape efficiency*:
  each dot's rows, columns and contraction padded up to the matmul unit's tile (128 x 128 on a
  TPU MXU, the wgmma shape on an H100), so small or ragged dimensions cost what the padded
  matmul costs.
- **vector time**: other FLOPs and transcendentals at the vector units' rate, where the device
  table has one (GPU: the non-tensor f32 peak).
- **memory time**: the op's bytes (XLA's bytes accessed: operands read, output written) over the
  HBM bandwidth and the calibrated memory efficiency. On a GPU a read of a buffer produced
  shortly before comes partly from L2: the fraction of it that the bytes written since its
  producer ran have not pushed out of the cache, read at XLA's L2 speed-up.
- **fixed cost**: a kernel launch on GPU (XLA's own figure), a stated default on TPU.

Collectives and host transfers are not compute: `links.py` times them on their own links, and
`schedule.py` decides what of that time is exposed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

from hloscope.analyses.cost import Cost, CostAnalysis
from hloscope.analyses.steptime.calibration import Calibration
from hloscope.devices import Device
from hloscope.model.instruction import Instruction
from hloscope.model.module import HloModule
from hloscope.model.opcodes import OpCategory, category_of


class Bound(StrEnum):
    MATMUL = "matmul"
    VECTOR = "vector"
    MEMORY = "memory"
    OVERHEAD = "overhead"
    LINK = "link"


MATMUL_OPCODES = frozenset({"dot", "convolution", "ragged-dot", "scaled-dot"})


@dataclass(frozen=True, slots=True)
class OpRates:
    """The rates one device's ops run at, resolved once from its facts and calibration."""

    matmul_flops: float | None  # FLOP/s a tile-aligned matmul reaches
    vector_flops: float | None
    memory_bytes: float | None  # bytes/s a streaming op reaches
    overhead: float
    tile: tuple[int, int, int]
    cache_bytes: int | None
    cache_speedup: float


def op_rates(device: Device, calibration: Calibration, compute_dtype: str) -> OpRates:
    peaks = device.peak_flops
    peak = peaks.f32 if compute_dtype == "float32" and device.backend != "tpu" else peaks.bf16
    matmul = None if peak is None else peak * calibration.matmul_efficiency.value
    vector = peaks.f32 if device.backend in ("gpu", "cpu") else None
    memory = None if device.hbm_bandwidth is None else \
        device.hbm_bandwidth * calibration.memory_efficiency.value
    speedup = calibration.cache_speedup.value if calibration.cache_speedup else 1.0
    return OpRates(matmul, vector, memory, calibration.op_overhead.value,
                   calibration.matmul_tile, calibration.cache_bytes, speedup)


@dataclass(frozen=True, slots=True)
class ComputeTime:
    """One execution of a compute op."""

    seconds: float
    bound: Bound
    matmul_flops: int
    cached_bytes: float  # of its bytes, those read from the cache


def compute_time(rates: OpRates, cost: Cost, matmul_flops: int, shape_efficiency: float,
                 cached_bytes: float) -> ComputeTime:
    """The time of one op from its cost; `matmul_flops` of its FLOPs run on the matmul unit at
    `shape_efficiency`, `cached_bytes` of its bytes come from the cache."""
    terms = {Bound.MATMUL: _over(matmul_flops, rates.matmul_flops * shape_efficiency
                                 if rates.matmul_flops else None),
             Bound.VECTOR: _over(cost.flops - matmul_flops + cost.transcendentals,
                                 rates.vector_flops),
             Bound.MEMORY: _memory_seconds(rates, cost.bytes_accessed, cached_bytes)}
    bound = max(terms, key=lambda key: terms[key])
    busy = terms[bound]
    if busy < rates.overhead:
        bound = Bound.OVERHEAD
    return ComputeTime(rates.overhead + busy, bound, matmul_flops, cached_bytes)


def _memory_seconds(rates: OpRates, total: int, cached: float) -> float:
    if rates.memory_bytes is None:
        return 0.0
    uncached = max(0.0, total - cached)
    return (uncached + cached / rates.cache_speedup) / rates.memory_bytes


def _over(amount: float, rate: float | None) -> float:
    return amount / rate if amount > 0 and rate else 0.0


def is_matmul_kind(module: HloModule, computation: str, instruction: Instruction,
                   cost: Cost) -> bool:
    """A dot or convolution, a fusion around one, or a custom call with FLOPs (a library GEMM,
    a closed-form kernel such as splash attention)."""
    if instruction.opcode == "custom-call":
        return cost.flops > 0
    return bool(matmul_instructions(module, computation, instruction))


def matmul_instructions(module: HloModule, computation: str,
                        instruction: Instruction) -> list[tuple[str, Instruction]]:
    """(computation, instruction) of the dots and convolutions an op runs: itself, or what a
    fusion fuses (nested fusions included)."""
    if instruction.opcode in MATMUL_OPCODES:
        return [(computation, instruction)]
    if instruction.opcode != "fusion":
        return []
    fused_name = instruction.called_computation("calls") or ""
    fused = module.computations.get(fused_name)
    if fused is None:
        return []
    found: list[tuple[str, Instruction]] = []
    for inner in fused.instructions:
        if inner.opcode in MATMUL_OPCODES or inner.opcode == "fusion":
            found.extend(matmul_instructions(module, fused_name, inner))
    return found


def shape_efficiency(analysis: CostAnalysis, computation: str, instruction: Instruction,
                     tile: tuple[int, int, int]) -> float:
    """The FLOP-weighted fraction of the matmul unit an op's dots use once their rows, columns
    and contraction are padded to `tile`; 1 for convolutions and kernels."""
    useful = padded = 0.0
    for owner, dot in matmul_instructions(analysis.module, computation, instruction):
        dims = dot_dimensions(analysis, owner, dot)
        if dims is None:
            continue
        batch, rows, columns, contraction = dims
        useful += batch * rows * columns * contraction
        padded += batch * math.prod(_pad(n, t) for n, t in
                                    zip((rows, columns, contraction), tile, strict=True))
    return useful / padded if padded else 1.0


def dot_dimensions(analysis: CostAnalysis, computation: str,
                   dot: Instruction) -> tuple[int, int, int, int] | None:
    """(batch, rows, columns, contraction) of a dot in `computation`, from its operands."""
    if dot.opcode != "dot":
        return None
    operands = analysis.graph(computation).operand_shapes(dot)
    if len(operands) < 2 or not operands[0].is_array or not operands[1].is_array:
        return None
    lhs, rhs = operands[0].dimensions, operands[1].dimensions
    lhs_batch, rhs_batch = set(dot.lhs_batch_dims), set(dot.rhs_batch_dims)
    lhs_contract, rhs_contract = set(dot.lhs_contracting_dims), set(dot.rhs_contracting_dims)
    batch = math.prod(lhs[i] for i in lhs_batch)
    contraction = math.prod(lhs[i] for i in lhs_contract)
    rows = math.prod(n for i, n in enumerate(lhs) if i not in lhs_batch | lhs_contract)
    columns = math.prod(n for i, n in enumerate(rhs) if i not in rhs_batch | rhs_contract)
    return batch, rows, columns, contraction


def _pad(size: int, tile: int) -> int:
    return max(tile, -(-size // tile) * tile) if size > 0 else 0


def is_compute(instruction: Instruction) -> bool:
    """Ops that run on the compute stream (not collectives, control flow or bookkeeping)."""
    category = category_of(instruction.opcode)
    return category not in (OpCategory.COLLECTIVE, OpCategory.CONTROL_FLOW, OpCategory.OTHER) \
        or instruction.opcode in ("infeed", "outfeed")
