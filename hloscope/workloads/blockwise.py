"""Memory-efficient attention and cross-entropy in pure JAX: no [b, h, s, s], no [b, s, vocab].

**Blockwise attention** (`blockwise_attention`) is flash attention (Dao et al. 2022, FA2's
loop order) written with `lax.scan`, so it compiles for every backend. The sequence is cut into
query blocks of `q_block` and key/value blocks of `kv_block` tokens; the scan visits only the
(query block, key block) pairs that are not entirely in the future (`block_pairs`: for equal
blocks n(n+1)/2 of n^2), and masks the diagonal ones. Per pair it computes the block's scores
[b, kv_heads, groups, q_block, kv_block] in fp32 and updates the query block's running maximum,
running sum and fp32 output accumulator (online softmax); the output is the accumulator over the
sum. It is a `jax.custom_vjp`: the forward saves only q, k, v, the output and the log-sum-exp
[b, kv_heads, groups, s] (fp32), and the backward scans the same pairs again, recomputing each
block's probabilities from the log-sum-exp and accumulating fp32 dq, dk and dv. So neither
direction holds more than one block's scores, and XLA sees two `while` loops.

FLOPs, against plain attention's forward QK^T and PV matmuls over the full square (4·b·s²·h):
the forward does the same two matmuls on the visited pairs only, (n+1)/(2n) of the square for n
equal blocks (1 when the sequence is one block); the backward does five per pair (the scores
again, dV, dP, dQ, dK) where plain attention's backward does four over the square — the
recompute of the scores is flash attention's trade of FLOPs for memory.

Grouped-query attention is native: queries are viewed as [b, s, kv_heads, groups, d] and each
key/value head serves its group without being repeated.

**Blockwise cross-entropy** (`blockwise_cross_entropy`) scans over chunks of `chunk` positions;
each chunk's logits [b, chunk, vocab] are computed, reduced to the log-sum-exp and the target's
logit, and dropped. The chunk function is `jax.checkpoint`ed (nothing saved), so the backward
pass recomputes one chunk's logits at a time rather than keeping them all. The mean over tokens
equals the plain loss's (the same fp32 log-softmax, reordered sums).

This module imports jax: import it only in child processes and tests.
"""
from __future__ import annotations

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

MASK_VALUE = -0.7 * float(np.finfo(np.float32).max)
"""Scores of future keys: finite (no inf - inf), far below any real score (splash's value)."""
Blocks = tuple[int, int]  # (q_block, kv_block)
Carry = tuple[jax.Array, jax.Array, jax.Array]  # a scan's three accumulators


def block_pairs(seq: int, q_block: int, kv_block: int) -> np.ndarray:
    """The (query block, key block) index pairs causal attention needs, query-block major:
    key block j is visited for query block i when its first key is not after i's last query."""
    pairs = [(i, j) for i in range(seq // q_block)
             for j in range(seq // kv_block) if j * kv_block <= (i + 1) * q_block - 1]
    return np.asarray(pairs, dtype=np.int32)


def blockwise_attention(q: jax.Array, k: jax.Array, v: jax.Array, q_block: int,
                        kv_block: int) -> jax.Array:
    """Causal attention of q [b, s, heads, d] over k, v [b, s, kv_heads, d] (heads a multiple
    of kv_heads); returns [b, s, heads, d] in q's dtype."""
    seq = q.shape[1]
    if seq % q_block or seq % kv_block:
        raise ValueError(f"blocks {q_block}, {kv_block} do not divide the sequence {seq}")
    return _flash(q, k, v, (q_block, kv_block))


def _grouped(q: jax.Array, kv_heads: int) -> jax.Array:
    b, s, heads, d = q.shape
    return q.reshape(b, s, kv_heads, heads // kv_heads, d)


def _block_mask(i: jax.Array, j: jax.Array, blocks: Blocks) -> jax.Array:
    q_block, kv_block = blocks
    queries = i * q_block + jnp.arange(q_block)
    keys = j * kv_block + jnp.arange(kv_block)
    return keys[None, :] <= queries[:, None]  # [q_block, kv_block]


def _rows(x: jax.Array, start: jax.Array, size: int, axis: int) -> jax.Array:
    return jax.lax.dynamic_slice_in_dim(x, start * size, size, axis)


def _put_rows(x: jax.Array, update: jax.Array, start: jax.Array, axis: int) -> jax.Array:
    return jax.lax.dynamic_update_slice_in_dim(x, update, start * update.shape[axis], axis)


def _scores(qi: jax.Array, kj: jax.Array, scale: float) -> jax.Array:
    """[b, kv, g, q_block, kv_block] fp32 scores of a query block against a key block."""
    return jnp.einsum("bqkgd,bskd->bkgqs", qi, kj, preferred_element_type=jnp.float32) * scale


def _flash_forward(q: jax.Array, k: jax.Array, v: jax.Array,
                   blocks: Blocks) -> tuple[jax.Array, jax.Array]:
    """Output [b, s, heads, d] and log-sum-exp [b, kv, g, s] (fp32)."""
    b, s, heads, d = q.shape
    kv = k.shape[2]
    q_block, kv_block = blocks
    grouped, scale = _grouped(q, kv), 1.0 / math.sqrt(d)
    acc = jnp.zeros((*grouped.shape[:-1], d), jnp.float32)  # [b, s, kv, g, d]
    stats = jnp.full((b, kv, heads // kv, s), MASK_VALUE, jnp.float32)

    def visit(carry: Carry, pair: jax.Array) -> tuple[Carry, None]:
        acc, top, total = carry
        i, j = pair[0], pair[1]
        qi = _rows(grouped, i, q_block, 1)
        kj, vj = _rows(k, j, kv_block, 1), _rows(v, j, kv_block, 1)
        mask = _block_mask(i, j, blocks)
        scores = jnp.where(mask, _scores(qi, kj, scale), MASK_VALUE)
        old_top, old_total = _rows(top, i, q_block, 3), _rows(total, i, q_block, 3)
        new_top = jnp.maximum(old_top, scores.max(-1))
        correction = jnp.exp(old_top - new_top)
        probs = jnp.where(mask, jnp.exp(scores - new_top[..., None]), 0.0)
        new_total = old_total * correction + probs.sum(-1)
        values = jnp.einsum("bkgqs,bskd->bqkgd", probs.astype(v.dtype), vj,
                            preferred_element_type=jnp.float32)
        old_acc = _rows(acc, i, q_block, 1)
        new_acc = old_acc * _per_row(correction) + values
        return (_put_rows(acc, new_acc, i, 1), _put_rows(top, new_top, i, 3),
                _put_rows(total, new_total, i, 3)), None

    pairs = jnp.asarray(block_pairs(s, q_block, kv_block))
    (acc, top, total), _ = jax.lax.scan(visit, (acc, stats, jnp.zeros_like(stats)), pairs)
    out = (acc / _per_row(total)).astype(q.dtype).reshape(b, s, heads, d)
    return out, top + jnp.log(total)


def _per_row(stat: jax.Array) -> jax.Array:
    """[b, kv, g, q] row statistics as [b, q, kv, g, 1], to scale [b, q, kv, g, d] rows."""
    return jnp.moveaxis(stat, -1, 1)[..., None]


@functools.partial(jax.checkpoint, policy=jax.checkpoint_policies.nothing_saveable,
                   static_argnums=(3,))
def _opaque_forward(q: jax.Array, k: jax.Array, v: jax.Array,
                    blocks: Blocks) -> tuple[jax.Array, jax.Array]:
    """`_flash_forward` kept whole when an enclosing scan is differentiated.

    Inside a differentiated `lax.scan` (the layer stack) JAX hoists the loop-invariant part of
    the body out of the loop; for the pair scan that part is each pair's causal mask broadcast
    to the block's score shape, stacked over the pairs: [pairs, b, kv, g, q_block, kv_block],
    as large as the scores we avoid. Under `jax.checkpoint` with nothing saveable no such
    residual is kept, and nothing is recomputed either (the forward is primal-only)."""
    return _flash_forward(q, k, v, blocks)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
def _flash(q: jax.Array, k: jax.Array, v: jax.Array, blocks: Blocks) -> jax.Array:
    return _flash_forward(q, k, v, blocks)[0]


def _flash_fwd(q: jax.Array, k: jax.Array, v: jax.Array,
               blocks: Blocks) -> tuple[jax.Array, tuple[jax.Array, ...]]:
    out, lse = _opaque_forward(q, k, v, blocks)
    return out, (q, k, v, out, lse)


def _flash_bwd(blocks: Blocks, residuals: tuple[jax.Array, ...],
               d_out: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    q, k, v, out, lse = residuals
    b, s, heads, d = q.shape
    kv = k.shape[2]
    q_block, kv_block = blocks
    grouped, d_grouped, scale = _grouped(q, kv), _grouped(d_out, kv), 1.0 / math.sqrt(d)
    # D_i = rowsum(dO_i * O_i): the softmax backward's per-row term, [b, kv, g, s].
    rowdot = jnp.moveaxis((d_grouped.astype(jnp.float32)
                           * _grouped(out, kv).astype(jnp.float32)).sum(-1), 1, -1)
    dq = jnp.zeros(grouped.shape, jnp.float32)
    dk, dv = jnp.zeros(k.shape, jnp.float32), jnp.zeros(v.shape, jnp.float32)

    def visit(carry: Carry, pair: jax.Array) -> tuple[Carry, None]:
        dq, dk, dv = carry
        i, j = pair[0], pair[1]
        qi, doi = _rows(grouped, i, q_block, 1), _rows(d_grouped, i, q_block, 1)
        kj, vj = _rows(k, j, kv_block, 1), _rows(v, j, kv_block, 1)
        mask = _block_mask(i, j, blocks)
        lse_i, rowdot_i = _rows(lse, i, q_block, 3), _rows(rowdot, i, q_block, 3)
        probs = jnp.where(mask, jnp.exp(_scores(qi, kj, scale) - lse_i[..., None]), 0.0)
        dv_j = jnp.einsum("bkgqs,bqkgd->bskd", probs.astype(v.dtype), doi,
                          preferred_element_type=jnp.float32)
        d_probs = jnp.einsum("bqkgd,bskd->bkgqs", doi, vj, preferred_element_type=jnp.float32)
        d_scores = (probs * (d_probs - rowdot_i[..., None]) * scale).astype(q.dtype)
        dq_i = jnp.einsum("bkgqs,bskd->bqkgd", d_scores, kj, preferred_element_type=jnp.float32)
        dk_j = jnp.einsum("bkgqs,bqkgd->bskd", d_scores, qi, preferred_element_type=jnp.float32)
        dq = _put_rows(dq, _rows(dq, i, q_block, 1) + dq_i, i, 1)
        dk = _put_rows(dk, _rows(dk, j, kv_block, 1) + dk_j, j, 1)
        dv = _put_rows(dv, _rows(dv, j, kv_block, 1) + dv_j, j, 1)
        return (dq, dk, dv), None

    pairs = jnp.asarray(block_pairs(s, q_block, kv_block))
    (dq, dk, dv), _ = jax.lax.scan(visit, (dq, dk, dv), pairs)
    return dq.reshape(b, s, heads, d).astype(q.dtype), dk.astype(k.dtype), dv.astype(v.dtype)


_flash.defvjp(_flash_fwd, _flash_bwd)


def blockwise_cross_entropy(x: jax.Array, targets: jax.Array, weight: jax.Array, tied: bool,
                            chunk: int) -> jax.Array:
    """Mean next-token cross-entropy of hidden states x [b, s, h] under the unembedding `weight`
    ([vocab, h] when `tied` to the token embedding, else [h, vocab], in x's dtype), computed
    over chunks of `chunk` positions without the full [b, s, vocab] logits."""
    b, s, h = x.shape
    if s % chunk:
        raise ValueError(f"loss chunk {chunk} does not divide the sequence {s}")
    chunks = s // chunk
    xs = jnp.swapaxes(x.reshape(b, chunks, chunk, h), 0, 1)  # [chunks, b, chunk, h]
    ts = jnp.swapaxes(targets.reshape(b, chunks, chunk), 0, 1)

    @functools.partial(jax.checkpoint, policy=jax.checkpoint_policies.nothing_saveable)
    def chunk_loss(x_chunk: jax.Array, t_chunk: jax.Array, weight: jax.Array) -> jax.Array:
        logits = jnp.einsum("bsh,vh->bsv", x_chunk, weight) if tied else x_chunk @ weight
        logits = logits.astype(jnp.float32)
        picked = jnp.take_along_axis(logits, t_chunk[..., None], axis=-1)[..., 0]
        return (jax.nn.logsumexp(logits, axis=-1) - picked).sum()

    def visit(total: jax.Array, chunk_inputs: tuple[jax.Array, jax.Array]) -> tuple[Any, None]:
        return total + chunk_loss(*chunk_inputs, weight), None

    total, _ = jax.lax.scan(visit, jnp.zeros((), jnp.float32), (xs, ts))
    return total / (b * s)
