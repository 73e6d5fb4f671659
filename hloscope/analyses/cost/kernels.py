"""Pallas TPU kernels costed by their closed form: JAX's splash attention.

A Pallas kernel on TPU is a `custom-call` to `tpu_custom_call` whose Mosaic body XLA's cost
analysis counts as nothing. A splash attention launch (recognised by jax's kernel name at the
end of its op_name) is costed from the flash-attention closed form on its shapes, following
splash_attention_kernel.py of jax 0.10.2: q, k, v are the first three floating operands (k, v
[*batch, s_kv, d] for `mqa`, [*batch, kv_heads, s_kv, d] for `mha`; a `SEQ_MINOR` layout, 2 in
the kernel metadata, swaps the last two); block sizes come from the kernel metadata (absent, the
whole sequence is one block); the block mask, elided in the dump, is assumed causal; FLOPs count
each visited (q block, kv block) pair's matmuls, one exp per score, and bytes XLA's default rule.
The closed form, matmul by matmul: see docs/flops-and-remat.md, 'What is counted' (Splash
attention).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from hloscope.analyses.cost.convolution import FMA_FLOPS
from hloscope.analyses.cost.rules import Site
from hloscope.analyses.cost.vector import Cost
from hloscope.model.shape import Shape

PALLAS_TPU_TARGET = "tpu_custom_call"
SPLASH_KERNEL = re.compile(r"splash_(mqa|mha)_(fwd|dq|dkv)(?:_segmented)?_(?:no_)?residuals")
SEQ_MINOR = 2  # jax's QKVLayout.SEQ_MINOR: [..., head_dim, seq]
CAUSAL_ASSUMED = "causal mask assumed (the block mask constant is not printed)"
_BLOCK_KEYS = {"fwd": ("block_q", "block_kv"), "dq": ("block_q_dq", "block_kv_dq"),
               "dkv": ("block_q_dkv", "block_kv_dkv")}
_LAYOUT_KEYS = ("q_layout", "k_layout", "v_layout")
_NON_FUSED_DKV_OUTPUTS = 4  # dk and dv scratch, dk, dv


@dataclass(frozen=True, slots=True)
class KernelCost:
    """One launch of a recognised kernel: its closed-form cost and what it rests on."""

    kernel: str  # jax's kernel name, e.g. splash_mqa_fwd_residuals
    phase: str  # fwd, dq or dkv
    cost: Cost
    matmuls: int  # per visited block pair and head
    visited_blocks: int  # (q block, kv block) pairs per head
    total_blocks: int
    basis: str  # how the block pairs were found


def kernel_cost(site: Site) -> KernelCost | None:
    """The closed-form cost of a recognised Pallas kernel launch; None for any other."""
    instruction = site.instruction
    if instruction.custom_call_target != PALLAS_TPU_TARGET:
        return None
    match = SPLASH_KERNEL.search(instruction.op_name) or SPLASH_KERNEL.search(instruction.name)
    if match is None:
        return None
    return _splash(site, match.group(0), match.group(2))


def _splash(site: Site, kernel: str, phase: str) -> KernelCost | None:
    metadata = kernel_metadata(site)
    floating = [s for s in site.operand_shapes if s.is_array and _is_floating(s)]
    if len(floating) < 3:
        return None
    q, k, v = (_head_minor(s, metadata.get(key))
               for s, key in zip(floating[:3], _LAYOUT_KEYS, strict=True))
    if q.rank < 3 or k.rank < 2 or v.rank < 2:
        return None
    launches = math.prod(q.dimensions[:-2])  # vmapped batch dimensions x query heads
    s_q, d = q.dimensions[-2], q.dimensions[-1]
    s_kv, d_v = k.dimensions[-2], v.dimensions[-1]
    q_key, kv_key = _BLOCK_KEYS[phase]
    block_q, block_kv = _block(metadata, q_key, s_q), _block(metadata, kv_key, s_kv)
    if s_q % block_q or s_kv % block_kv:
        return None
    visited = causal_block_pairs(s_q, s_kv, block_q, block_kv)
    widths = _contraction_widths(phase, d, d_v, fused=_fused_dkv(site))
    pairs = launches * visited
    cost = Cost(flops=FMA_FLOPS * block_q * block_kv * sum(widths) * pairs,
                transcendentals=block_q * block_kv * pairs,
                bytes_accessed=site.default_bytes())
    return KernelCost(kernel, phase, cost, len(widths), visited,
                      (s_q // block_q) * (s_kv // block_kv), CAUSAL_ASSUMED)


def causal_block_pairs(s_q: int, s_kv: int, block_q: int, block_kv: int) -> int:
    """(q block i, kv block j) pairs holding a query at or after a key: j*bkv <= (i+1)*bq - 1."""
    kv_blocks = s_kv // block_kv
    return sum(min(kv_blocks, ((i + 1) * block_q - 1) // block_kv + 1)
               for i in range(s_q // block_q))


def _contraction_widths(phase: str, d: int, d_v: int, fused: bool) -> tuple[int, ...]:
    """The contraction width of each matmul a visited block pair does (kernel source)."""
    if phase == "fwd":
        return (d, d_v)  # s = q k^T; o += p v
    if phase == "dq":
        return (d, d_v, d)  # s = q k^T; dp = do v^T; dq += ds k
    dkv = (d, d_v, d_v, d)  # s^T = k q^T; dv += p^T do; dp^T = v do^T; dk += ds^T q
    return (*dkv, d) if fused else dkv  # fused: dq = ds k as well


def _fused_dkv(site: Site) -> bool:
    shape = site.shape
    return shape.is_tuple and len(shape.tuple_shapes) > _NON_FUSED_DKV_OUTPUTS


def kernel_metadata(site: Site) -> dict:
    """The `xprof_metadata` JSON jax attaches to a Pallas kernel ({} when absent or unreadable)."""
    raw = site.instruction.frontend_attributes.get("kernel_metadata")
    try:
        outer = json.loads(raw) if raw else {}
        inner = outer.get("xprof_metadata") if isinstance(outer, dict) else None
        found = json.loads(inner) if isinstance(inner, str) else inner
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _block(metadata: dict, key: str, length: int) -> int:
    value = metadata.get(key)
    return value if isinstance(value, int) and value > 0 else length


def _head_minor(shape: Shape, layout: object) -> Shape:
    if layout != SEQ_MINOR or shape.rank < 2:
        return shape
    dims = (*shape.dimensions[:-2], shape.dimensions[-1], shape.dimensions[-2])
    return Shape(shape.element_type, dims)


def _is_floating(shape: Shape) -> bool:
    return shape.element_type.startswith(("f", "bf"))
