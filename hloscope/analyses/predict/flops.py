"""Forward FLOPs a per-tensor policy recomputes in one layer's backward pass (closed form).

The block's dataflow (`workloads/layers.py`), with the matmul FLOPs of each named tensor's
producer on one device (T tokens, widths per device; attention's Q·Kᵀ and P·V are
2·b·s²·(H·d) each):

    norm1 <- x            0 (elementwise)          qkv / Q, K, V <- norm1   2·T·h·width
    probs <- Q, K         Q·Kᵀ (unnamed)           attn_out <- probs, V     P·V
    out_proj <- attn_out  2·T·(H·d)·h              norm2 <- out_proj (+ x)  0
    mlp_in / gate, up <- norm2  2·T·h·f each       mlp_hidden <- mlp_in     0
    mlp_out <- mlp_hidden 2·T·f·h

The backward pass reads: norm1, Q/K/V and the probabilities, attn_out, out_proj (the residual
stream norm2 differentiates), norm2, the MLP's input projection(s) and mlp_hidden. A tensor it
reads that the policy does not keep is recomputed, and with it every input it needs that is not
kept either (the closure); the probabilities are never named, so Q·Kᵀ is always recomputed.
The predictor uses only differences of this figure between two policies (the compiled
baseline absorbs what XLA adds or removes beside it).
"""
from __future__ import annotations

from hloscope.configs.tensors import BlockConfig, block_tensors

PROBS = "probs"


def _graph(config: BlockConfig, tensor_ways: int) -> dict[str, tuple[tuple[str, ...], float]]:
    """name -> (inputs, FLOPs per token of its producer) on one device."""
    tensors = {t.name: t for t in block_tensors(config)}
    h, s = config.d_model, config.seq_len
    local_heads = tensors["attn_out"].device_width(tensor_ways)
    projections = [n for n in ("qkv", "query_proj", "key_proj", "value_proj") if n in tensors]
    mlp_in = [n for n in ("mlp_in", "mlp_gate", "mlp_up") if n in tensors]
    graph: dict[str, tuple[tuple[str, ...], float]] = {"norm1": ((), 0.0)}
    for name in projections:
        graph[name] = (("norm1",), 2.0 * h * tensors[name].device_width(tensor_ways))
    attention = 2.0 * s * local_heads  # per token: Q·Kᵀ (or P·V) over s keys
    graph[PROBS] = (tuple(projections), attention)
    graph["attn_out"] = ((PROBS, *projections), attention)
    graph["out_proj"] = (("attn_out",), 2.0 * local_heads * h)
    graph["norm2"] = (("out_proj",), 0.0)
    for mlp_name in mlp_in:
        graph[mlp_name] = (("norm2",), 2.0 * h * tensors[mlp_name].device_width(tensor_ways))
    graph["mlp_hidden"] = (tuple(mlp_in), 0.0)
    return graph


def recompute_flops_per_token(config: BlockConfig, kept: set[str], tensor_ways: int = 1) -> float:
    """FLOPs per token one layer's backward pass recomputes when `kept` are saved."""
    graph = _graph(config, tensor_ways)
    done: set[str] = set()
    total = 0.0
    stack = [name for name in graph if name not in kept]
    while stack:
        name = stack.pop()
        if name in done:
            continue
        done.add(name)
        inputs, cost = graph[name]
        total += cost
        stack += [i for i in inputs if i not in kept and i not in done]
    return total
