"""libtpu's fit verdict and buffer assignment against hloscope's text-only estimate, on programs of
other families, generations and meshes than the built-in model's (issue 37, item 3).

Small hand-written JAX programs (MoE top-2, a GQA decoder layer with RoPE, a BERT-style encoder,
a ResNet with batch norm, a 128k tied-vocabulary LM head, Megatron tensor parallelism on a 2-D
mesh, FSDP, nested scans, a scan with unroll=2, host offload of saved activations, a KV-cache
decode step, a hand-written Adam step) are compiled deviceless for TPU v4 2x2x1, v5p 2x2x1, v6e
2x2, v5e 2x2 and v5e 4x4 with XLA's dumps on. Each family has a size knob `k` (its batch), and
`k = 1` is compiled; for the sized families a knob far above the HBM is compiled too (libtpu
refuses it before code generation, in seconds), and knobs are searched along the secant between
the allocations found for one about 12% over the usable HBM and one within 10% under it.

Per program: libtpu's verdict (RESOURCE_EXHAUSTED and the figure its message states), the
buffer assignment's HBM total (every color-0 allocation of the dump's *buffer-assignment.txt),
memory_analysis() when it compiled, and hloscope's estimate and fit verdict from the
after-optimizations text alone (`oom.diagnosis.required_figure` on `memory(module, backend="tpu")`
with no dump or log: the HBM total estimated, against the device table's usable HBM).

    flock /tmp/hloscope-tpu-A.lock python benchmarks/tpu_families.py compile   # jax + libtpu
    python benchmarks/tpu_families.py report [OUT.txt]                         # no jax

Dumps are cached under ~/.cache/hloscope-families/<program>/ (a program is compiled once; bump
a family's version in VERSIONS to compile it again).
"""
from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CACHE = Path(os.environ.get("HLOSCOPE_FAMILIES_CACHE",
                            Path.home() / ".cache" / "hloscope-families"))
NEAR, OVER = 0.95, 1.12  # of the usable HBM, for the sized programs
GIB = 1 << 30


@dataclass(frozen=True)
class Family:
    name: str
    target: str
    mesh: tuple[int, ...]
    axes: tuple[str, ...]
    sized: bool  # near-HBM and refused sizes are extrapolated from k = 1, 2
    version: int = 1


FAMILIES = (
    Family("moe_top2", "tpu:v5p:2x2x1", (4,), ("data",), True),
    Family("bert_encoder", "tpu:v4:2x2x1", (4,), ("data",), True),
    Family("resnet_bn", "tpu:v5e:2x2", (4,), ("data",), True),
    Family("tied_vocab_128k", "tpu:v5e:4x4", (16,), ("data",), True),
    Family("megatron_tp", "tpu:v5e:4x4", (4, 4), ("data", "model"), False),
    Family("nested_scans", "tpu:v4:2x2x1", (4,), ("data",), False),
    Family("scan_unroll2", "tpu:v5e:2x2", (4,), ("data",), False),
    Family("offload", "tpu:v5p:2x2x1", (4,), ("data",), False),
    Family("adam", "tpu:v4:2x2x1", (4,), ("data",), True),
    # v6e last: its deviceless code generation takes minutes where v5e's takes seconds
    Family("gqa_rope", "tpu:v6e:2x2", (4,), ("data",), True, version=2),
    Family("fsdp", "tpu:v6e:2x2", (4,), ("fsdp",), True),
    Family("kv_decode", "tpu:v6e:2x2", (4,), ("data",), True),
)


def program_name(family: Family, k: int) -> str:
    return f"{family.name}-k{k}-v{family.version}"


# --- the programs (jax) ------------------------------------------------------------------------
def build(family: Family, k: int, mesh: Any) -> tuple[Callable, tuple, tuple[int, ...]]:
    """(function, abstract arguments with shardings, donated argument numbers)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    tree_map = jax.tree_util.tree_map
    ndev = math.prod(family.mesh)

    def spec(shape, dtype=jnp.float32, pspec=None):
        sharding = NamedSharding(mesh, P() if pspec is None else pspec)
        return jax.ShapeDtypeStruct(shape, dtype, sharding=sharding)

    def like(tree, dtype=jnp.float32):
        return tree_map(lambda a: jax.ShapeDtypeStruct(a.shape, dtype, sharding=a.sharding), tree)

    def sgd_step(loss):
        def step(params, mom, batch):
            value, grads = jax.value_and_grad(loss)(params, batch)
            mom = tree_map(lambda m, g: 0.9 * m + g.astype(m.dtype), mom, grads)
            params = tree_map(lambda p, m: p - (1e-3 * m).astype(p.dtype), params, mom)
            return params, mom, value
        return step

    def sgd(loss, params, batch):
        return sgd_step(loss), (params, like(params), batch), (0, 1)

    def rms(x):
        return x * jax.lax.rsqrt(jnp.mean(x.astype(jnp.float32) ** 2, -1, keepdims=True)
                                 + 1e-6).astype(x.dtype)

    def layer_norm(x, g):
        mean = jnp.mean(x, -1, keepdims=True)
        var = jnp.mean((x - mean) ** 2, -1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-6) * g

    def rope(x):  # x: [b, s, h, d]
        s, d = x.shape[1], x.shape[-1]
        freq = 1.0 / (10000 ** (jnp.arange(0, d, 2, dtype=jnp.float32) / d))
        angle = jnp.arange(s, dtype=jnp.float32)[:, None] * freq[None]
        cos, sin = jnp.cos(angle)[None, :, None], jnp.sin(angle)[None, :, None]
        x1, x2 = x[..., ::2].astype(jnp.float32), x[..., 1::2].astype(jnp.float32)
        out = jnp.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)
        return out.reshape(x.shape).astype(x.dtype)

    def attention(q, k_, v, causal=True):  # q [b,s,h,d], k_/v [b,t,g,d], h = g * rep
        rep = q.shape[2] // k_.shape[2]
        k_, v = jnp.repeat(k_, rep, 2), jnp.repeat(v, rep, 2)
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k_).astype(jnp.float32) / math.sqrt(q.shape[-1])
        if causal:
            s = q.shape[1]
            scores = jnp.where(jnp.tril(jnp.ones((s, s), bool)), scores, -1e9)
        probs = jax.nn.softmax(scores, -1).astype(q.dtype)
        return jnp.einsum("bhqk,bkhd->bqhd", probs, v)

    name = family.name
    if name == "moe_top2":
        d, f, experts = 1024, 2048, 8

        def loss(p, batch):
            x = batch["x"]
            logits = x @ p["router"]
            top, idx = jax.lax.top_k(logits.astype(jnp.float32), 2)
            gate = jax.nn.softmax(top, -1)
            weights = jnp.sum(jax.nn.one_hot(idx, experts) * gate[..., None], -2).astype(x.dtype)
            h = jax.nn.gelu(jnp.einsum("bsd,edf->bsef", x, p["w1"]))
            y = jnp.einsum("bsef,efd,bse->bsd", h, p["w2"], weights)
            return jnp.mean((y + x).astype(jnp.float32) ** 2)
        params = {"router": spec((d, experts), jnp.bfloat16), "w1": spec((experts, d, f),
                  jnp.bfloat16), "w2": spec((experts, f, d), jnp.bfloat16)}
        return sgd(loss, params, {"x": spec((8 * k, 512, d), jnp.bfloat16, P("data"))})

    if name.startswith("gqa_rope"):
        d, heads, groups, hd, s, depth = 2048, 16, 4, 128, 1024, 1

        def loss(p, batch):
            x = batch["x"]
            b = x.shape[0]
            for w in p:
                h = rms(x)
                q = rope((h @ w["q"]).reshape(b, s, heads, hd))
                kk = rope((h @ w["k"]).reshape(b, s, groups, hd))
                v = (h @ w["v"]).reshape(b, s, groups, hd)
                x = x + attention(q, kk, v).reshape(b, s, d) @ w["o"]
                h = rms(x)
                x = x + (jax.nn.silu(h @ w["gate"]) * (h @ w["up"])) @ w["down"]
            return jnp.mean(x.astype(jnp.float32) ** 2)
        params = [{"q": spec((d, heads * hd), jnp.bfloat16), "k": spec((d, groups * hd),
                   jnp.bfloat16), "v": spec((d, groups * hd), jnp.bfloat16),
                   "o": spec((heads * hd, d), jnp.bfloat16), "gate": spec((d, 4 * d), jnp.bfloat16),
                   "up": spec((d, 4 * d), jnp.bfloat16), "down": spec((4 * d, d), jnp.bfloat16)}
                  for _ in range(depth)]
        return sgd(loss, params, {"x": spec((ndev * k, s, d), jnp.bfloat16, P("data"))})

    if name == "bert_encoder":
        d, heads, s, depth = 1024, 16, 512, 2

        def loss(p, batch):
            x = p["embed"][batch["tokens"]]
            b = x.shape[0]
            for w in p["layers"]:
                qkv = (x @ w["qkv"]).reshape(b, s, 3, heads, d // heads)
                a = attention(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], causal=False)
                x = layer_norm(x + a.reshape(b, s, d) @ w["o"], w["ln1"])
                x = layer_norm(x + jax.nn.gelu(x @ w["ff1"]) @ w["ff2"], w["ln2"])
            return jnp.mean(x ** 2)
        params = {"embed": spec((30522, d)), "layers": [
            {"qkv": spec((d, 3 * d)), "o": spec((d, d)), "ff1": spec((d, 4 * d)),
             "ff2": spec((4 * d, d)), "ln1": spec((d,)), "ln2": spec((d,))}
            for _ in range(depth)]}
        return sgd(loss, params, {"tokens": spec((8 * k, s), jnp.int32, P("data"))})

    if name == "resnet_bn":
        widths = (64, 128, 256)  # one basic block a stage

        def conv(x, w, stride=1):
            return jax.lax.conv_general_dilated(x, w, (stride, stride), "SAME",
                                                dimension_numbers=("NHWC", "HWIO", "NHWC"))

        def bn(x, g):
            mean = jnp.mean(x, (0, 1, 2))
            var = jnp.var(x, (0, 1, 2))
            return (x - mean) * jax.lax.rsqrt(var + 1e-5) * g["scale"] + g["bias"]

        def loss(p, batch):
            x = jax.nn.relu(bn(conv(batch["images"], p["stem"]), p["stem_bn"]))
            for stage, blocks in enumerate(p["stages"]):
                for n, blk in enumerate(blocks):
                    stride = 2 if stage and not n else 1
                    y = jax.nn.relu(bn(conv(x, blk["c1"], stride), blk["b1"]))
                    y = bn(conv(y, blk["c2"]), blk["b2"])
                    short = conv(x, blk["proj"], stride) if "proj" in blk else x
                    x = jax.nn.relu(y + short)
            logits = jnp.mean(x, (1, 2)) @ p["head"]
            return -jnp.mean(jax.nn.log_softmax(logits)[:, 0])

        def norm(c):
            return {"scale": spec((c,)), "bias": spec((c,))}
        stages, c_in = [], 64
        for c in widths:
            blocks = []
            for _ in range(1):
                blk = {"c1": spec((3, 3, c_in, c)), "b1": norm(c), "c2": spec((3, 3, c, c)),
                       "b2": norm(c)}
                if c_in != c:
                    blk["proj"] = spec((1, 1, c_in, c))
                blocks.append(blk)
                c_in = c
            stages.append(blocks)
        params = {"stem": spec((3, 3, 3, 64)), "stem_bn": norm(64), "stages": stages,
                  "head": spec((widths[-1], 1000))}
        return sgd(loss, params, {"images": spec((32 * k, 64, 64, 3), jnp.float32, P("data"))})

    if name == "tied_vocab_128k":
        vocab, d, s = 131072, 1024, 1024

        def loss(p, batch):
            x = p["embed"][batch["tokens"]]
            x = x + jax.nn.gelu(rms(x) @ p["w1"]) @ p["w2"]
            logits = (rms(x) @ p["embed"].T).astype(jnp.float32)
            labels = jnp.take_along_axis(logits, batch["tokens"][..., None], -1)[..., 0]
            return jnp.mean(jax.nn.logsumexp(logits, -1) - labels)
        params = {"embed": spec((vocab, d), jnp.bfloat16), "w1": spec((d, 4 * d), jnp.bfloat16),
                  "w2": spec((4 * d, d), jnp.bfloat16)}
        return sgd(loss, params, {"tokens": spec((16 * k, s), jnp.int32, P("data"))})

    if name.startswith("megatron_tp"):
        d, heads, s, depth = 2048, 16, 1024, 1
        hd = d // heads
        constrain = jax.lax.with_sharding_constraint

        def loss(p, batch):
            x = batch["x"]
            b = x.shape[0]
            for w in p:
                h = rms(x)
                q, kk, v = ((h @ w[n]).reshape(b, s, heads, hd) for n in ("q", "k", "v"))
                q, kk, v = (constrain(t, NamedSharding(mesh, P("data", None, "model")))
                            for t in (q, kk, v))
                x = x + attention(q, kk, v).reshape(b, s, d) @ w["o"]
                h = rms(x)
                x = x + jax.nn.gelu(h @ w["ff1"]) @ w["ff2"]
                x = constrain(x, NamedSharding(mesh, P("data")))
            return jnp.mean(x.astype(jnp.float32) ** 2)
        col, row = P(None, "model"), P("model", None)
        params = [{"q": spec((d, d), jnp.bfloat16, col), "k": spec((d, d), jnp.bfloat16, col),
                   "v": spec((d, d), jnp.bfloat16, col), "o": spec((d, d), jnp.bfloat16, row),
                   "ff1": spec((d, 4 * d), jnp.bfloat16, col),
                   "ff2": spec((4 * d, d), jnp.bfloat16, row)} for _ in range(depth)]
        return sgd(loss, params, {"x": spec((family.mesh[0] * 2 * k, s, d), jnp.bfloat16,
                                            P("data"))})

    if name == "fsdp":
        d, depth = 4096, 3

        def loss(p, batch):
            x = batch["x"]
            for w in p:
                x = x + jnp.tanh(x @ w["a"]) @ w["b"]
            return jnp.mean(x.astype(jnp.float32) ** 2)
        params = [{"a": spec((d, 2 * d), jnp.bfloat16, P("fsdp")),
                   "b": spec((2 * d, d), jnp.bfloat16, P("fsdp"))} for _ in range(depth)]
        return sgd(loss, params, {"x": spec((ndev * 1024 * k, d), jnp.bfloat16, P("fsdp"))})

    if name in ("nested_scans", "scan_unroll2", "offload"):
        d, rows = 2048, 4096
        policies = jax.checkpoint_policies
        policy = (policies.offload_dot_with_no_batch_dims("device", "pinned_host")
                  if name == "offload" else policies.dots_with_no_batch_dims_saveable)

        def layer(h, w):
            return h + jnp.tanh(h @ w["a"]) @ w["b"], None
        block = jax.checkpoint(layer, policy=policy)

        def loss(p, batch):
            if name == "nested_scans":
                def group(h, ws):
                    return jax.lax.scan(block, h, ws)[0], None
                h = jax.lax.scan(group, batch["x"], p)[0]
            else:
                h = jax.lax.scan(block, batch["x"], p, unroll=2 if name == "scan_unroll2" else 1)[0]
            return jnp.mean(h.astype(jnp.float32) ** 2)
        lead = (2, 3) if name == "nested_scans" else (4,)
        params = {"a": spec((*lead, d, 2 * d), jnp.bfloat16),
                  "b": spec((*lead, 2 * d, d), jnp.bfloat16)}
        return sgd(loss, params, {"x": spec((ndev * rows * k, d), jnp.bfloat16, P("data"))})

    if name == "kv_decode":
        d, heads, groups, hd, depth, length = 2048, 16, 4, 128, 2, 4096

        def decode(p, cache, x, pos):
            b = x.shape[0]
            keys, values = cache
            for n, w in enumerate(p):
                h = rms(x)
                q = (h @ w["q"]).reshape(b, 1, heads, hd)
                kk = (h @ w["k"]).reshape(b, 1, 1, groups, hd)
                v = (h @ w["v"]).reshape(b, 1, 1, groups, hd)
                keys = jax.lax.dynamic_update_slice(keys, kk.transpose(1, 0, 2, 3, 4),
                                                    (n, 0, pos, 0, 0))
                values = jax.lax.dynamic_update_slice(values, v.transpose(1, 0, 2, 3, 4),
                                                      (n, 0, pos, 0, 0))
                a = attention(q, keys[n], values[n], causal=False)
                x = x + a.reshape(b, d) @ w["o"]
                x = x + jax.nn.silu(rms(x) @ w["up"]) @ w["down"]
            return (keys, values), x
        params = [{"q": spec((d, heads * hd), jnp.bfloat16), "k": spec((d, groups * hd),
                   jnp.bfloat16), "v": spec((d, groups * hd), jnp.bfloat16),
                   "o": spec((heads * hd, d), jnp.bfloat16), "up": spec((d, 4 * d), jnp.bfloat16),
                   "down": spec((4 * d, d), jnp.bfloat16)} for _ in range(depth)]
        batch = ndev * 8 * k
        cache = tuple(spec((depth, batch, length, groups, hd), jnp.bfloat16,
                           P(None, "data")) for _ in range(2))
        return decode, (params, cache, spec((batch, d), jnp.bfloat16, P("data")),
                        spec((), jnp.int32)), (1,)

    if name == "adam":
        d, depth = 4096, 3

        def loss(p, batch):
            x = batch["x"]
            for w in p:
                x = x + jax.nn.gelu(x @ w["a"]) @ w["b"]
            return jnp.mean(x ** 2)

        def step(params, opt, batch):
            value, grads = jax.value_and_grad(loss)(params, batch)
            t = opt["t"] + 1
            mu = tree_map(lambda m, g: 0.9 * m + 0.1 * g, opt["mu"], grads)
            nu = tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, opt["nu"], grads)
            c1, c2 = 1 - 0.9 ** t, 1 - 0.999 ** t
            params = tree_map(lambda p, m, v: p - 1e-3 * (m / c1) / (jnp.sqrt(v / c2) + 1e-8),
                              params, mu, nu)
            return params, {"mu": mu, "nu": nu, "t": t}, value
        params = [{"a": spec((d, 2 * d)), "b": spec((2 * d, d))} for _ in range(depth)]
        opt = {"mu": like(params), "nu": like(params), "t": spec((), jnp.float32)}
        return step, (params, opt, {"x": spec((ndev * 512 * k, d), jnp.float32, P("data"))}), (0, 1)

    raise KeyError(name)


def compile_one(family: Family, k: int) -> dict:
    """Compiles one program (cached): the compile record and its dump folder."""
    from hloscope.configs.targets import parse_target
    from hloscope.workloads.compiler import compile_function
    from hloscope.workloads.topology import make_mesh

    folder = CACHE / program_name(family, k)
    record_path = folder / "record.json"
    if record_path.exists():
        return json.loads(record_path.read_text())
    target = parse_target(family.target)
    mesh = make_mesh(target, family.axes, family.mesh)
    fn, args, donate = build(family, k, mesh)
    fn.__name__ = family.name
    result = compile_function(fn, args, target=target.spec, backend="tpu",
                              dump_dir=folder / "dump", donate_argnums=donate)
    record = {"family": family.name, "k": k, "target": family.target,
              "mesh": "x".join(map(str, family.mesh)), **result.to_dict()}
    record_path.write_text(json.dumps(record, indent=1))
    print(f"{program_name(family, k)}: {result.status} in {result.compile_seconds or 0:.0f} s",
          flush=True)
    return record


def usable_hbm(family: Family) -> int:
    from hloscope.configs.targets import parse_target
    from hloscope.devices import get_device

    return get_device(parse_target(family.target).device.name).usable_memory_bytes or 0


def size_search(family: Family, totals: dict[int, int], goal: float, low: float, high: float,
                tries: int = 5) -> None:
    """Compiles knobs along the secant through the two totals nearest `goal` x the usable HBM
    until one lands in [low, high] x it (small programs keep more in VMEM, so the allocation is
    not affine from k = 1 on)."""
    usable = usable_hbm(family)
    for _ in range(tries):
        if any(low * usable <= t <= high * usable for t in totals.values()):
            return
        (a, ta), (b, tb) = _secant_points(totals, goal * usable)
        if ta == tb:
            return
        k = max(1, round(a + (goal * usable - ta) * (b - a) / (tb - ta)))
        if k in totals:
            return
        compile_one(family, k)
        total = ba_total(family, k)
        if total is None:
            return
        totals[k] = total


def _secant_points(totals: dict[int, int], goal: float) -> list[tuple[int, int]]:
    """The largest knob below `goal` and the smallest above it, else the two nearest."""
    below = [kt for kt in totals.items() if kt[1] < goal]
    above = [kt for kt in totals.items() if kt[1] > goal]
    if below and above:
        return [max(below), min(above)]
    return sorted(totals.items(), key=lambda kt: abs(kt[1] - goal))[:2]


def argument_bytes(family: Family, k: int, mesh: Any) -> int:
    """Bytes of the program's arguments on one device (their shards)."""
    import jax

    _, args, _ = build(family, k, mesh)
    return sum(math.prod(a.sharding.shard_shape(a.shape)) * a.dtype.itemsize
               for a in jax.tree_util.tree_leaves(args))


def probe(family: Family) -> None:
    """Compiles the knob at which the arguments alone are 1.2 x the usable HBM: libtpu refuses
    it after buffer assignment, before code generation (seconds)."""
    from hloscope.configs.targets import parse_target
    from hloscope.workloads.topology import make_mesh

    mesh = make_mesh(parse_target(family.target), family.axes, family.mesh)
    one, two = argument_bytes(family, 1, mesh), argument_bytes(family, 2, mesh)
    if two <= one:
        return
    compile_one(family, math.ceil((1.2 * usable_hbm(family) - (2 * one - two)) / (two - one)))


def compile_all(names: tuple[str, ...]) -> None:
    """Every family, or those named; `FAMILY:K` compiles that one program only."""
    from hloscope.configs.targets import TPU_QUIET_ENV

    os.environ.update(TPU_QUIET_ENV, JAX_PLATFORMS="cpu", JAX_ENABLE_COMPILATION_CACHE="false")
    by_name = {f.name: f for f in FAMILIES}
    singles = [n.split(":") for n in names if ":" in n]
    for family_name, k in singles:
        compile_one(by_name[family_name], int(k))
    names = tuple(n for n in names if ":" not in n)
    if singles and not names:
        return
    chosen = [f for f in FAMILIES if not names or f.name in names]
    for family in chosen:
        probe(family)
    for family in chosen:
        compile_one(family, 1)
        if family.sized:
            total = ba_total(family, 1)
            if total:  # far above the HBM: libtpu refuses before code generation (seconds)
                compile_one(family, 8 * math.ceil(usable_hbm(family) / total))
    for family in (f for f in chosen if f.sized):
        known = {k: t for k in programs_compiled(family) if (t := ba_total(family, k))}
        if len(known) >= 2:
            size_search(family, known, OVER, 1.0, 1.3)
            size_search(family, known, NEAR, 0.90, 1.0)


# --- the report (no jax) -----------------------------------------------------------------------
@dataclass
class Row:
    name: str
    family: str
    target: str
    mesh: str
    status: str  # libtpu: "ok" / "oom" / "error"
    stated: int | None  # the RESOURCE_EXHAUSTED message's figure
    usable: int
    ba_total: int | None
    memory_analysis: int | None
    estimate: int | None
    estimate_fits: bool | None

    @property
    def error(self) -> float | None:
        if self.ba_total is None or self.estimate is None:
            return None
        return self.estimate / self.ba_total - 1

    @property
    def agrees(self) -> bool | None:
        if self.status not in ("ok", "oom") or self.estimate_fits is None:
            return None
        return self.estimate_fits == (self.status == "ok")


def dump_file(folder: Path, suffix: str) -> Path | None:
    found = sorted(folder.glob(f"*{suffix}"))
    return found[0] if found else None


def ba_total(family: Family, k: int) -> int | None:
    """The buffer assignment's HBM total: every color-0 allocation (libtpu's compared figure)."""
    from hloscope.parsers.xla_memory import read_buffer_assignment, space_allocations

    path = dump_file(CACHE / program_name(family, k) / "dump", "-buffer-assignment.txt")
    if path is None:
        return None
    spaces = {s.color: s for s in space_allocations(read_buffer_assignment(path))}
    return spaces[0].total_bytes if 0 in spaces else None


def read_program(family: Family, k: int) -> Row:
    from hloscope.analyses.memory.analysis import memory
    from hloscope.analyses.oom.diagnosis import required_figure
    from hloscope.parsers.compile_log import parse_compile_log
    from hloscope.parsers.text import parse_text

    folder = CACHE / program_name(family, k)
    record = json.loads((folder / "record.json").read_text())
    dump = folder / "dump"
    usable = usable_hbm(family)
    stated = None
    if record["status"] == "oom":
        verdict = parse_compile_log(record.get("error") or "").compile_verdict
        stated = None if verdict is None else verdict.required_bytes
    total = ba_total(family, k)
    memory_bytes = None
    if record.get("memory"):
        m = record["memory"]
        memory_bytes = m["argument_bytes"] + m["temp_bytes"] + m["output_bytes"] - m["alias_bytes"]
    estimate = fits = None
    text_path = dump_file(dump, "after_optimizations.txt")
    if text_path is not None:
        module = parse_text(text_path.read_text(), source=text_path.name)[0]
        required = required_figure(memory(module, backend="tpu", hbm_bytes=usable), "tpu", None)
        estimate, fits = required.bytes, required.bytes <= usable
    return Row(program_name(family, k), family.name, family.target.removeprefix("tpu:"),
               record["mesh"], record["status"], stated, usable, total, memory_bytes, estimate,
               fits)


def programs_compiled(family: Family) -> list[int]:
    prefix, suffix = f"{family.name}-k", f"-v{family.version}"
    found = []
    for folder in CACHE.glob(f"{prefix}*{suffix}"):
        middle = folder.name[len(prefix):-len(suffix)]
        if middle.isdigit() and (folder / "record.json").exists():
            found.append(int(middle))
    return sorted(found)


def printed_precision(stated: int) -> float:
    """Half a unit of the last digit libtpu prints: two decimals of G (T, P above)."""
    unit = GIB
    while stated >= unit * 1024:
        unit *= 1024
    return 0.005 * unit


def gib(value: int | None) -> str:
    return "-" if value is None else f"{value / GIB:.3f}"


def report(out: Path | None) -> None:
    rows = [read_program(f, k) for f in FAMILIES for k in programs_compiled(f)]
    header = (f"{'program':<24} {'target':<9} {'mesh':<4} {'libtpu':<6} {'stated':>8} "
              f"{'BA total':>8} {'mem_an.':>8} {'vs BA':>7} {'estimate':>8} {'error':>7} "
              f"{'HBM':>6} {'verdict':<7}")
    lines = ["# libtpu's verdict vs hloscope's text-only estimate (GiB, per device). BA total:",
             "# every HBM allocation of the buffer assignment; stated: the RESOURCE_EXHAUSTED",
             "# figure; mem_an.: memory_analysis() (arguments + temporaries + outputs - aliased),",
             "# vs BA: its share above the BA total; error: estimate / BA total - 1; verdict: the",
             "# text-only fit (estimate <= usable HBM) against libtpu's.",
             "# `python benchmarks/tpu_families.py report`", header]
    for r in rows:
        error = "-" if r.error is None else f"{100 * r.error:+.2f}%"
        verdict = {True: "agrees", False: "DIFFERS", None: "-"}[r.agrees]
        analysis = ("-" if r.memory_analysis is None or r.ba_total is None
                    else f"{100 * (r.memory_analysis / r.ba_total - 1):+.1f}%")
        lines.append(f"{r.name:<24} {r.target:<9} {r.mesh:<4} {r.status:<6} {gib(r.stated):>8} "
                     f"{gib(r.ba_total):>8} {gib(r.memory_analysis):>8} {analysis:>7} "
                     f"{gib(r.estimate):>8} {error:>7} {r.usable / GIB:>6.2f} {verdict:<7}")
    lines += summary(rows)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if out is not None:
        out.write_text(text)


def summary(rows: list[Row]) -> list[str]:
    readable = [r for r in rows if r.error is not None]
    within = [r for r in readable if abs(r.error or 0) <= 0.02]
    judged = [r for r in rows if r.agrees is not None]
    refused = [r for r in rows if r.status == "oom"]
    stated_equal = [r for r in refused if r.stated is not None and r.ba_total is not None
                    and abs(r.stated - r.ba_total) <= printed_precision(r.stated)]
    near = [r for r in rows if r.ba_total is not None and 0.9 * r.usable <= r.ba_total <= r.usable]
    over_ma = [r for r in rows if r.status == "ok" and r.memory_analysis is not None
               and r.memory_analysis > r.usable]
    return [
        "",
        f"programs: {len(rows)} ({len({r.family for r in rows})} families, "
        f"{len({r.target for r in rows})} targets); refused by libtpu: {len(refused)}; "
        f"BA total within 10% under the usable HBM: {len(near)}",
        f"RESOURCE_EXHAUSTED figure = BA total (to the message's two decimals): "
        f"{len(stated_equal)} of {len(refused)}",
        f"compiled, memory_analysis() above the usable HBM: {len(over_ma)}",
        f"estimate within 2% of the BA total: {len(within)} of {len(readable)}",
        f"text-only verdict equals libtpu's: {sum(bool(r.agrees) for r in judged)} of "
        f"{len(judged)}",
    ]


def main(argv: list[str]) -> None:
    command = argv[0] if argv else "report"
    if command == "compile":
        compile_all(tuple(argv[1:]))
    elif command == "report":
        report(Path(argv[1]) if len(argv) > 1 else None)
    else:
        raise SystemExit("usage: tpu_families.py compile [FAMILY[:K] ...] | report [OUT.txt]")


if __name__ == "__main__":
    main(sys.argv[1:])
