"""hloscope's frontier search against MaxText's remat estimator procedure, on the same model,
target, names and batch range, both compiling through hloscope's own compiler and build cache.

MaxText's procedure (src/MaxText/estimator.py, its facts re-implemented here; no code copied):
the names are ordered by MaxText's `tensor_score` (larger tensors first: for each name a tuple of
negated dimensions, sorted ascending, ties in MaxText's list order); `largest_batch_size` is a
binary search of the per-device batch with a full compile per probe (the minimum probed first,
then the maximum, then the bisection, as MaxText writes it); MODE 2 first finds the largest
batch full remat fits, then walks the policies from all-on-device towards all-remat — each step
moves the first name still on the device to offload, and once none is left, the first offloaded
one to remat: 2T+1 policies for T names — bisecting each policy's batch from the previous
policy's largest. Its answer is every (batch, policy) with a batch > 0. A probe "is OOM" when the
compile fails or XLA's allocation exceeds the capacity (the same fit test the frontier search
uses). MaxText compiles every probe; this counts every probe (`calls`) and the distinct programs
among them (repeated probes are cache hits here).

The frontier search (`hloscope.sweep(search="frontier")`) runs on every per-device batch from 1
to --max-batch (the same range MaxText's first bisection searches). Its `compiles` count includes
its baselines and its cache hits (so compiles MaxText's run already made still count).

Checks the issue's acceptance (printed as PASS/FAIL lines):
(a) frontier compiles <= MaxText's calls / 3, and at every batch in MaxText's answer the frontier's
    winner is at least as fast by the same step estimate (the predictor's step estimate for both,
    and the compiled programs' own roofline estimate for both);
(b) every compiled candidate's allocation within 5% of its prediction: the frontier's compiled
    rows (its `full` baselines, the predictor's inputs, left out) and --random candidates
    drawn (seeded) from those it did not compile, each compiled now, drawn until that many
    fit (out-of-memory draws are listed, not compared; at most 3 x as many drawn);
(c) with --exhaustive: every candidate of the names × choices × batches grid compiled, and the
    frontier equal to the exhaustive one (per batch, the fastest by the predictor's step estimate
    among those whose compiled allocation fits).

    python benchmarks/frontier_vs_maxtext.py --model llama-1b --target tpu:v5e:2x2 --seq 2048 \
        --names attn_out,query_proj,mlp_gate,mlp_up --max-batch 8 --random 8 \
        [--exhaustive attn_out,mlp_gate,mlp_up:1,2,3] [--cache DIR] [--out FILE] [--json FILE]

With `--step FILE.py:make_step` instead of --model the same runs on a user's step
(examples/jax_llama_step.py, say): the names are its traced checkpoint names, MaxText's order
scores each by its traced shape (the dimensions after the batch: the first, then the product of
the rest), the frontier measures each name by a compile first (`hloscope.sweeps.frontier_run`),
and its predictor is `StepPredictor`. The global batch is the per-device batch times the devices
tensor parallelism leaves.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any

import hloscope
from hloscope.analyses.predict.baseline import baseline_batch, mesh_ways
from hloscope.analyses.predict.measured import MeasuredBlock
from hloscope.analyses.predict.model import Prediction, Predictor
from hloscope.analyses.predict.step_model import StepPredictor
from hloscope.configs.presets import preset_config
from hloscope.configs.tensors import block_tensors, encode_named
from hloscope.sweeps.frontier import Candidate, calibrated, frontier_names, policy_space
from hloscope.sweeps.frontier_run import frontier_capacity
from hloscope.sweeps.grid import Grid
from hloscope.units import format_bytes
from hloscope.workloads.cache import default_cache_dir

TOLERANCE = 0.05


@dataclasses.dataclass(frozen=True)
class Built:
    ok: bool
    required_bytes: int | None
    step_s: float | None  # the compiled program's roofline estimate (overlapped)

    def fits(self, capacity: int) -> bool:
        return self.ok and self.required_bytes is not None and self.required_bytes <= capacity


class Compiler:
    """Compiles (policy, per-device batch) through `hloscope.sweep` with a shared cache;
    counts the calls and the distinct programs."""

    def __init__(self, args: argparse.Namespace, data_ways: int) -> None:
        self.args = args
        self.data_ways = data_ways
        self.calls = 0
        self.built: dict[tuple[str, int], Built] = {}
        self.log: list[str] = []

    def build(self, policy: str, pdb: int) -> Built:
        self.calls += 1
        key = (policy, pdb)
        if key not in self.built:
            started = time.perf_counter()
            result = hloscope.sweep(**_workload(self.args), policies=[policy],
                                    target=self.args.target, cache=self.args.cache,
                                    grid=Grid((self.args.seq,), (pdb * self.data_ways,)))
            figures = result.outcomes[0].figures
            step = figures.step.overlapped_seconds if figures.step is not None else None
            self.built[key] = Built(figures.status == "ok", figures.required_bytes, step)
            self.log.append(f"  compile {len(self.built):3d}: pdb {pdb:3d} {policy}  "
                            f"{_bytes(figures.required_bytes)}  {figures.status}  "
                            f"{time.perf_counter() - started:.0f} s")
            print(self.log[-1], file=sys.stderr, flush=True)
        return self.built[key]


# --- MaxText's procedure ------------------------------------------------------------------
def maxtext_order(config: Any, names: tuple[str, ...]) -> list[str]:
    """`names` in MaxText's priority order (its tensor_score; its list order breaks ties)."""
    seq, emb, mlp = config.seq_len, config.d_model, config.d_ff
    q, kv = config.n_heads * config.head_dim, config.kv_heads * config.head_dim
    score = {"context": (-seq, -q), "mlpwi_0": (-emb, -mlp), "mlpwi_1": (-emb, -mlp),
             "mlpwo": (-mlp, -emb), "query_proj": (-emb, -q), "key_proj": (-emb, -kv),
             "value_proj": (-emb, -kv), "out_proj": (-q, -emb), "qkv_proj": (-emb, -q - 2 * kv),
             "mlpwi": (-emb, -mlp)}
    # MaxText's four lists (fused or not, one or two MLP inputs) in one consistent order
    listed = ["context", "qkv_proj", "query_proj", "key_proj", "value_proj", "mlpwi", "mlpwi_0",
              "mlpwi_1", "mlpwo", "out_proj"]
    ours = {t.maxtext: t.name for t in block_tensors(config) if t.maxtext}
    theirs = {v: k for k, v in ours.items()}
    unknown = [n for n in names if n not in theirs]
    if unknown:
        raise SystemExit(f"names without a MaxText counterpart: {', '.join(unknown)}")
    order = sorted((theirs[n] for n in names), key=lambda m: (score[m], listed.index(m)))
    return [ours[m] for m in order]


def step_order(step: str, target: str, names: tuple[str, ...]) -> list[str]:
    """A user step's `names` in MaxText's priority order, scored by their traced shapes: the
    dimensions after the batch, the first then the product of the rest, larger first (ties in
    trace order)."""
    shapes = {row.name: row.shape for row in hloscope.step_policies(step, target).tensors}

    def score(name: str) -> tuple[int, int]:
        shape = shapes[name][1:] or (1,)
        return (-shape[0], -math.prod(shape[1:]))

    return sorted(names, key=score)


def _workload(args: argparse.Namespace) -> dict[str, str]:
    """`hloscope.sweep`'s model or step argument."""
    return {"step": args.step} if args.step else {"model": args.model}


def _block(args: argparse.Namespace) -> tuple[str, ...]:
    """The names a policy chooses for: the built-in block's, or the traced step's."""
    if args.step:
        return tuple(dict.fromkeys(r.name for r in hloscope.step_policies(
            args.step, args.target).tensors))
    return frontier_names(preset_config(args.model, seq_len=args.seq))


def predictor_of(result: Any) -> Predictor:
    """The predictor the frontier search ended with."""
    if result.measured is not None:
        return StepPredictor(tuple(result.baselines),
                             block=MeasuredBlock.from_dict(result.measured))
    return Predictor(tuple(result.baselines))


def next_policy(policy: dict[str, str]) -> dict[str, str] | None:
    """MaxText's next_policy: the first name on the device to offload, else the first offloaded
    one to remat; None when all are remat."""
    source, target = ("device", "offload") if "device" in policy.values() else ("offload", "remat")
    for name, choice in policy.items():
        if choice == source:
            return {**policy, name: target}
    return None


class MaxTextProcedure:
    def __init__(self, compiler: Compiler, names: list[str], block: tuple[str, ...],
                 capacity: int) -> None:
        self.compiler, self.names, self.block, self.capacity = compiler, names, block, capacity

    def is_oom(self, policy: dict[str, str], pdb: int) -> bool:
        return not self.compiler.build(encode_named(policy, self.block), pdb).fits(self.capacity)

    def largest_batch_size(self, policy: dict[str, str], min_pdb: int, max_pdb: int) -> int:
        if self.is_oom(policy, min_pdb):
            return min_pdb - 1
        if not self.is_oom(policy, max_pdb):
            return max_pdb
        low, high, result = min_pdb, max_pdb, min_pdb
        while low <= high:
            mid = (low + high) // 2
            if mid < min_pdb:
                low = mid + 1
                continue
            if not self.is_oom(policy, mid):
                result, low = mid, mid + 1
            else:
                high = mid - 1
        return result

    def run(self, max_pdb: int) -> list[tuple[int, dict[str, str]]]:
        top = self.largest_batch_size(dict.fromkeys(self.names, "remat"), 1, max_pdb)
        answer = []
        policy: dict[str, str] | None = dict.fromkeys(self.names, "device")
        pdb = 1
        while policy is not None:
            pdb = self.largest_batch_size(policy, pdb, top)
            if pdb > 0:
                answer.append((pdb, policy))
            policy = next_policy(policy)
        return answer


# --- the report -------------------------------------------------------------------------------
def _bytes(value: int | None) -> str:
    return "-" if value is None else format_bytes(value)


def _short(policy: str) -> str:
    return policy.removeprefix("names:")


def main() -> int:
    args = _arguments()
    args.cache = args.cache or default_cache_dir()
    block = _block(args)
    names = tuple(args.names.split(",")) if args.names else block
    if args.step:
        request = hloscope.api.sweep_request(policies="full", target=args.target,
                                             grid=Grid((args.seq,), (1,)), cache=args.cache,
                                             step=args.step)
        data_ways = request.data_parallel
        order = step_order(args.step, args.target, names)
    else:
        config = preset_config(args.model, seq_len=args.seq)
        data_ways = mesh_ways(config, args.target).batch
        request = hloscope.api.sweep_request(model=args.model, policies="full",
                                             target=args.target,
                                             grid=Grid((args.seq,), (data_ways,)),
                                             cache=args.cache)
        order = maxtext_order(config, names)
    capacity = frontier_capacity(request, None)
    compiler = Compiler(args, data_ways)
    lines = [f"# python benchmarks/frontier_vs_maxtext.py {' '.join(sys.argv[1:])}",
             f"python {platform.python_version()}, hloscope {hloscope.__version__}; "
             f"{args.step or args.model} on {args.target}, seq {args.seq}, "
             f"per-device batch 1..{args.max_batch}"
             f" (global = {data_ways} x), capacity {format_bytes(capacity)}",
             f"names: {', '.join(names)} (the block's other names recomputed)"]
    report: dict[str, Any] = {"model": args.step or args.model, "target": args.target,
                              "seq": args.seq,
                              "names": list(names), "capacity_bytes": capacity}

    started = time.perf_counter()
    maxtext = MaxTextProcedure(compiler, order, block, capacity)
    answer = maxtext.run(args.max_batch)
    maxtext_calls, maxtext_programs = compiler.calls, len(compiler.built)
    lines += ["", f"MaxText's procedure: priority order {', '.join(order)}; "
              f"{2 * len(order) + 1} policies",
              f"  compiles: {maxtext_calls} probes ({maxtext_programs} distinct programs), "
              f"{time.perf_counter() - started:.0f} s",
              "  answer (per-device batch: policy):"]
    lines += [f"    {pdb}: {_short(encode_named(p, block))}" for pdb, p in answer]
    lines.append(_range_check(compiler, block, args.max_batch, capacity))

    started = time.perf_counter()
    asked = sorted({pdb for pdb, _ in answer}) if args.frontier_batches == "answer" \
        else range(1, args.max_batch + 1)
    batches = tuple(p * data_ways for p in asked)
    result = hloscope.sweep(**_workload(args), target=args.target, cache=args.cache,
                            grid=Grid((args.seq,), batches), search="frontier",
                            capacity=capacity, names=",".join(names))
    predictor = predictor_of(result)
    which = "those of MaxText's answer" if args.frontier_batches == "answer" \
        else "the whole range"
    lines += ["", f"Frontier search at per-device batches {', '.join(map(str, asked))} "
              f"({which}): "
              f"{result.compiles} compiles (baselines and cache hits "
              f"included) for {result.candidates} candidates, "
              f"{time.perf_counter() - started:.0f} s",
              "  winners (per-device batch: policy, predicted / compiled bytes):"]
    for batch in batches:
        winner = result.winners[batch]
        row = next((r for r in result.rows if r["batch"] == batch and r["chosen"]), None)
        lines.append(f"    {batch // data_ways}: "
                     + ("none fits" if row is None else
                        f"{_short(winner)}  {_bytes(row['predicted_bytes'])} / "
                        f"{_bytes(row['compiled_bytes'])}"))

    ok_a, faster_lines = _compare(answer, result, predictor, compiler, block, data_ways)
    ratio_ok = result.compiles * 3 <= maxtext_calls
    lines += ["", f"(a) compiles: frontier {result.compiles} vs MaxText {maxtext_calls} probes "
              f"(ratio {result.compiles / maxtext_calls:.2f}; {maxtext_programs} distinct) "
              f"{'PASS' if ratio_ok else 'FAIL'} (<= 1/3)"] + faster_lines
    lines.append(f"    at least as fast at every batch of MaxText's answer: "
                 f"{'PASS' if ok_a else 'FAIL'}")

    errors, error_lines = _prediction_errors(args, result, predictor, compiler, block, names,
                                             batches, data_ways, capacity)
    raw = [abs(e) for kind, _, e in errors if kind in ("searched", "random")]
    used = [abs(e) for kind, _, e in errors if kind not in ("searched", "random")]
    worst = max(raw) if raw else None
    worst_used = max(used) if used else None
    lines += ["", "(b) prediction errors (predicted / compiled - 1; 'held': the figure the search "
              "held when it chose to compile the candidate; 'calibrated': the figure it holds for "
              "an uncompiled one, the prediction raised by its nearest compiled neighbour's "
              "error where that compile showed the predictor low; both as allocations, squeezed "
              "to libtpu's landing where over its remat limit, halfway between the two loss "
              "orders where the baselines do not say which libtpu runs):"] + error_lines
    for label, value, count in (("the predictor alone", worst, len(raw)),
                                ("as the search predicts", worst_used, len(used))):
        lines.append(f"    worst {label}: {value:.1%} over {count} compiled candidates: "
                     f"{'PASS' if value <= TOLERANCE else 'FAIL'} (<= 5%)"
                     if value is not None else f"    {label}: none compiled")
    report.update(maxtext_calls=maxtext_calls, maxtext_programs=maxtext_programs,
                  maxtext_answer=[[pdb, encode_named(p, block)] for pdb, p in answer],
                  frontier_compiles=result.compiles, frontier_candidates=result.candidates,
                  frontier_winners={str(b // data_ways): w for b, w in result.winners.items()},
                  errors=[{"kind": k, "policy": p, "error": e} for k, p, e in errors],
                  accepted_a=bool(ok_a and ratio_ok),
                  accepted_b_predictor=worst is not None and worst <= TOLERANCE,
                  accepted_b_search=worst_used is not None and worst_used <= TOLERANCE)
    if args.exhaustive:
        ok_c, exhaustive_lines = _exhaustive(args, capacity, data_ways)
        lines += [""] + exhaustive_lines
        report["accepted_c"] = ok_c
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


def _range_check(compiler: Compiler, block: tuple[str, ...], max_batch: int,
                 capacity: int) -> str:
    """Whether the range reaches where `full` stops fitting: `full` one past its top (a
    compile outside MaxText's count)."""
    full = encode_named({}, block)
    beyond = Compiler(compiler.args, compiler.data_ways).build(full, max_batch + 1)
    verdict = "fits: the range stops short of" if beyond.fits(capacity) else \
        "does not fit: the range reaches"
    return (f"  full at per-device batch {max_batch + 1}: {_bytes(beyond.required_bytes)}, "
            f"{verdict} where full remat stops fitting")


def _compare(answer: list, result: Any, predictor: Predictor, compiler: Compiler,
             block: tuple[str, ...], data_ways: int) -> tuple[bool, list[str]]:
    """MaxText's (batch, policy) against the frontier's winner at that batch, by the
    predictor's step estimate and the compiled programs' own."""
    ok = True
    out = ["    batch  MaxText's policy -> predicted / compiled step s   frontier's -> same"]
    for pdb, policy in answer:
        theirs = encode_named(policy, block)
        ours = result.winners.get(pdb * data_ways)
        if ours is None:
            ok = False
            out.append(f"    {pdb:5d}  {_short(theirs)}: the frontier found none  FAIL")
            continue
        p_theirs = predictor.predict(theirs, pdb * data_ways).step_seconds
        p_ours = predictor.predict(ours, pdb * data_ways).step_seconds
        c_theirs = compiler.build(theirs, pdb).step_s
        c_ours = compiler.build(ours, pdb).step_s
        good = p_ours <= p_theirs * (1 + 1e-9) and (
            c_ours is None or c_theirs is None or c_ours <= c_theirs * (1 + 1e-9))
        ok &= good
        out.append(f"    {pdb:5d}  {_short(theirs)} -> {p_theirs:.4f} / {c_theirs or 0:.4f}"
                   f"   {_short(ours)} -> {p_ours:.4f} / {c_ours or 0:.4f}"
                   f"  {'ok' if good else 'SLOWER'}")
    return ok, out


def _prediction_errors(args: argparse.Namespace, result: Any, predictor: Predictor,
                       compiler: Compiler, block: tuple[str, ...], names: tuple[str, ...],
                       batches: tuple[int, ...], data_ways: int, capacity: int
                       ) -> tuple[list[tuple[str, str, float]], list[str]]:
    errors: list[tuple[str, str, float]] = []
    lines = []
    compiled = {(r["batch"], r["policy"]) for r in result.rows if r["compiled_bytes"]}
    baselines = {(baseline_batch(b), encode_named({}, block)) for b in result.baselines}
    for row in result.rows:
        if row["compiled_bytes"] and (row["batch"], row["policy"]) not in baselines:
            label = f"{row['batch'] // data_ways}:{row['policy']}"
            errors.append(("searched", label, row["prediction_error"]))
            if row["search_predicted_bytes"]:
                errors.append(("searched, held", label,
                               row["search_predicted_bytes"] / row["compiled_bytes"] - 1))
    space = [(b, p) for b in batches for p in policy_space(names, block)
             if (b, p) not in compiled]
    compared = 0
    for batch, policy in _draws(space, args.random, args.seed):
        if compared == args.random:
            break
        built = compiler.build(policy, batch // data_ways)
        prediction: Prediction = predictor.predict(policy, batch)
        if built.fits(capacity):  # XLA:GPU compiles what does not fit: the capacity decides
            compared += 1
            errors.append(("random", f"{batch // data_ways}:{policy}",
                           prediction.allocation_bytes / built.required_bytes - 1))
            neighbours = [Candidate(predictor.predict(r["policy"], batch), r["compiled_bytes"])
                          for r in result.rows if r["batch"] == batch and r["compiled_bytes"]]
            held = prediction.allocation_for(calibrated(Candidate(prediction), neighbours))
            errors.append(("random, calibrated", f"{batch // data_ways}:{policy}",
                           held / built.required_bytes - 1))
        else:
            why = "out of memory" if built.ok or built.required_bytes else "compile failed"
            lines.append(f"    random {batch // data_ways}:{_short(policy)}: {why}"
                         f" ({_bytes(built.required_bytes)} stated)")
    for kind, label, error in errors:
        pdb, policy = label.split(":", 1)
        predicted = predictor.predict(policy, int(pdb) * data_ways)
        notes = [note for note, flag in (("needs more than the capacity",
                                          predicted.device_bytes > capacity),
                                         ("over libtpu's remat limit", predicted.squeezed),
                                         ("loss order undecided: halfway",
                                          predicted.loss_order_undecided
                                          and not predicted.squeezed))
                 if flag]
        lines.append(f"    {kind:18s} pdb {pdb:>3s} {_short(policy):55s} {error:+.2%}"
                     + (f"  ({'; '.join(notes)})" if notes else ""))
    return errors, lines


def _draws(space: list, count: int, seed: int) -> list:
    """`count` seeded draws, then up to 2 x `count` more (another seed) to take the place of
    those that turn out not to fit: the caller compiles in this order until `count` fit."""
    first = random.Random(seed).sample(space, min(count, len(space)))
    rest = [item for item in space if item not in set(first)]
    return first + random.Random(seed + 1).sample(rest, min(2 * count, len(rest)))


def _exhaustive(args: argparse.Namespace, capacity: int, data_ways: int
                ) -> tuple[bool, list[str]]:
    spec_names, spec_batches = args.exhaustive.split(":")
    names = tuple(spec_names.split(","))
    batches = tuple(int(b) * data_ways for b in spec_batches.split(","))
    block = _block(args)
    space = policy_space(names, block)
    compiler = Compiler(args, data_ways)
    compiled = {(b, p): compiler.build(p, b // data_ways) for b in batches for p in space}
    result = hloscope.sweep(**_workload(args), target=args.target, cache=args.cache,
                            grid=Grid((args.seq,), batches), search="frontier",
                            capacity=capacity, names=",".join(names))
    predictor = predictor_of(result)

    def speed(policy: str, batch: int) -> tuple:
        p = predictor.predict(policy, batch)
        return (p.step_seconds or 0.0, p.flops)

    ok = True
    lines = [f"(c) exhaustive: {len(names)} names ({', '.join(names)}) x 3 choices x "
             f"{len(batches)} batches = {len(compiled)} compiles; the frontier made "
             f"{result.compiles}"]
    for batch in batches:
        fitting = [p for p in space if compiled[batch, p].fits(capacity)]
        truth = min(fitting, key=lambda p: speed(p, batch)) if fitting else None
        found = result.winners[batch]
        same = (truth is None and found is None) or (
            truth is not None and found is not None
            and speed(found, batch) == speed(truth, batch)
            and compiled[batch, found].fits(capacity))
        ok &= same
        lines.append(f"    pdb {batch // data_ways}: exhaustive {_short(truth or 'none')}; "
                     f"frontier {_short(found or 'none')}  {'same' if same else 'DIFFERENT'}")
    lines.append(f"    frontier equals the exhaustive one: {'PASS' if ok else 'FAIL'}")
    return ok, lines


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="llama-1b")
    parser.add_argument("--step", default=None, metavar="FILE.py:make_step",
                        help="a user's step instead of --model")
    parser.add_argument("--target", default="tpu:v5e:2x2")
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--names", default=None, help="default: attn_out,query_proj,mlp_gate,"
                        "mlp_up (--model), every traced name (--step)")
    parser.add_argument("--max-batch", type=int, default=8, help="per-device batch range top")
    parser.add_argument("--frontier-batches", choices=("answer", "range"), default="answer",
                        help="the frontier's batches: those MaxText's answer names (default) "
                        "or every one of 1..--max-batch")
    parser.add_argument("--random", type=int, default=8,
                        help="compare this many random candidates that compile and fit "
                             "(at most 3 x as many drawn)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--exhaustive", default=None, help="NAMES:PDB,PDB,... e.g. "
                        "attn_out,mlp_gate,mlp_up:1,2,3")
    parser.add_argument("--cache", type=Path, default=None,
                        help="build cache (default: hloscope's)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if args.names is None and not args.step:
        args.names = "attn_out,query_proj,mlp_gate,mlp_up"
    return args


if __name__ == "__main__":
    sys.exit(main())
