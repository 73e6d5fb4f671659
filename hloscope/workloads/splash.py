"""Causal attention with JAX's Pallas TPU kernel, splash attention (`--attention splash`).

`jax.experimental.pallas.ops.tpu.splash_attention` (the kernel MaxText runs as `attention=flash`
on TPU). It compiles deviceless: with jax 0.10.2 / libtpu 0.0.42.1 a forward and backward of it
compiled for `v5e:2x2` without a TPU. In the optimized HLO each kernel launch is a
`custom-call` with `custom_call_target="tpu_custom_call"` (its Mosaic body serialised in the
backend config); XLA's cost analysis counts such a call as 0 FLOPs (that compile reported
4.2 MFLOP for a step whose attention matmuls are ~4 GFLOP), so FLOPs of a splash program must
come from the kernel's closed form on its shapes (hloscope.analyses.cost.kernels does).

Grouped-query attention runs the multi-query kernel (`make_splash_mqa`) once per key/value head
over its group of query heads, `vmap`ped over the batch and the key/value heads. Queries are
scaled by 1/sqrt(head_dim) before the kernel (the kernel does not scale). Under a mesh the kernel
runs in a `shard_map`: the batch split as the program's batch is, key/value heads over the
`tensor` axis when it divides them. TPU only: refused with a UsageError on other platforms.
This module imports jax: import it only in child processes and tests.
"""
from __future__ import annotations

import math
from typing import Any

import jax
from jax.sharding import PartitionSpec as P

from hloscope.configs.config import TransformerConfig
from hloscope.errors import UsageError
from hloscope.workloads import sharding

KERNEL_TARGET = "tpu_custom_call"
"""The custom_call_target of a Pallas TPU kernel in the optimized HLO (observed, see above)."""


def splash_attention(q: jax.Array, k: jax.Array, v: jax.Array, config: TransformerConfig,
                     mesh: Any = None) -> jax.Array:
    """Causal attention of q [b, s, heads, d] over k, v [b, s, kv_heads, d] with the splash
    kernel; returns [b, s, heads, d]."""
    _check_platform(mesh)
    kernel = _kernel(config)
    b, s, heads, d = q.shape
    kv = config.kv_heads
    grouped = (q / math.sqrt(d)).astype(q.dtype).reshape(b, s, kv, heads // kv, d)
    q_t = grouped.transpose(0, 2, 3, 1, 4)  # [b, kv, g, s, d]
    k_t, v_t = k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3)  # [b, kv, s, d]

    def run(q_t: jax.Array, k_t: jax.Array, v_t: jax.Array) -> jax.Array:
        return jax.vmap(jax.vmap(kernel))(q_t, k_t, v_t)

    if mesh is not None:
        spec = _spec(mesh, kv)
        run = jax.shard_map(run, mesh=mesh, in_specs=(spec, spec, spec), out_specs=spec,
                            check_vma=False)
    return run(q_t, k_t, v_t).transpose(0, 3, 1, 2, 4).reshape(b, s, heads, d)


def _kernel(config: TransformerConfig) -> Any:
    from jax.experimental.pallas.ops.tpu.splash_attention import (
        splash_attention_kernel as kernels,
    )
    from jax.experimental.pallas.ops.tpu.splash_attention import splash_attention_mask as masks

    s, groups = config.seq_len, config.n_heads // config.kv_heads
    q_block, kv_block = config.q_block, config.kv_block
    mask = masks.MultiHeadMask([masks.CausalMask((s, s)) for _ in range(groups)])
    blocks = kernels.BlockSizes(block_q=q_block, block_kv=kv_block, block_kv_compute=kv_block,
                                block_q_dkv=q_block, block_kv_dkv=kv_block,
                                block_kv_dkv_compute=kv_block, block_q_dq=q_block,
                                block_kv_dq=kv_block)
    return kernels.make_splash_mqa(mask, block_sizes=blocks, head_shards=1, q_seq_shards=1)


def _spec(mesh: Any, kv_heads: int) -> P:
    batch_axes = sharding.batch_sharding(mesh).spec[0]
    tensor = sharding.TENSOR
    heads = tensor if tensor in mesh.axis_names and kv_heads % mesh.shape[tensor] == 0 else None
    return P(batch_axes, heads)


def _check_platform(mesh: Any) -> None:
    platform = None if mesh is None else mesh.devices.flat[0].platform
    if platform is not None and platform != "tpu":
        raise UsageError(f"splash attention is a TPU kernel; on {platform} use "
                         "--attention blockwise")
