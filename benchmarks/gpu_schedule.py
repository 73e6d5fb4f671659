"""Per-tensor policies on a GPU target: the predictor's error, and where XLA:GPU's schedule puts
each program's peak.

Compiles (deviceless, through the build cache) `full` and every non-empty subset of --names kept
on the device (or with --choice offload, offloaded) at each --batches per-device batch,
predicts each subset from the `full` baselines (`analyses.predict`), and prints per program:
predicted and compiled allocation (XLA's memory-usage report) and the error, also of the
prediction without `full`'s headroom above its backward loop (`Predictor._backward_loop_slack`:
every layer an offloaded name fetches back counted); the live peak
(`hloscope memory`) before the layer loops, in the forward loop, between the loops, in the
backward loop and after them; the bytes the entry makes between the loops and holds through
the backward loop (`layer_span.deferred_bytes`: the loss moved after it); XLA's cost analysis
of the program (HBM bytes accessed); and the largest buffer live at the peak.

    python benchmarks/gpu_schedule.py [--model llama-1b] [--target gpu:h100:1x1x1] [--seq 2048]
        [--names query_proj,attn_out,mlp_gate,mlp_up] [--batches 4,8,12] [--choice device]
        [--out FILE]
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import sys
from pathlib import Path

import hloscope
from hloscope.analyses.cost.flops import flops
from hloscope.analyses.memory.analysis import memory
from hloscope.analyses.predict.baseline import mesh_ways
from hloscope.analyses.predict.model import Predictor
from hloscope.configs.presets import preset_config
from hloscope.loader.build import load_build
from hloscope.sweeps.frontier_run import baseline_from_build
from hloscope.sweeps.grid import Grid
from hloscope.workloads.cache import default_cache_dir

GIB = 2**30
REGIONS = ("before", "forward", "between", "backward", "after")


def compile_one(args: argparse.Namespace, policy: str, batch: int) -> Path:
    result = hloscope.sweep(model=args.model, policies=[policy], target=args.target,
                            cache=default_cache_dir(), grid=Grid((args.seq,), (batch,)))
    return Path(result.outcomes[0].folder)


def regions(folder: Path) -> tuple[dict[str, int], int, int, int, str]:
    """(the live peak per region, deferred bytes, XLA's allocation, HBM bytes accessed, the
    largest buffer live at the peak)."""
    loaded = load_build(folder)
    live = memory(loaded.module, backend="gpu")
    span = live.layer_span
    if span is None:
        raise SystemExit(f"{folder}: no forward and backward layer loop")
    steps = live.timeline
    first = next(s.step for s in steps if s.instruction == span.first_loop)
    last = next(s.step for s in steps if s.instruction == span.last_loop)

    def region(step: int) -> str:
        if step == first:
            return "forward"
        if step == last:
            return "backward"
        return "before" if step < first else "after" if step > last else "between"

    peaks = dict.fromkeys(REGIONS, 0)
    for step in steps:
        name = region(step.step)
        peaks[name] = max(peaks[name], step.live_bytes, step.inner_peak_bytes or 0)
    hbm = int(flops(loaded.module).total.bytes_accessed)
    largest = max(live.live_at_peak, key=lambda row: row.bytes)
    return (peaks, span.deferred_bytes, loaded.reported_device_bytes or 0, hbm,
            f"{largest.shape.split('{')[0]} {largest.bytes / GIB:.2f}")


def main() -> int:
    args = _arguments()
    ways = mesh_ways(preset_config(args.model, seq_len=args.seq), args.target).batch
    names = args.names.split(",")
    batches = [int(b) for b in args.batches.split(",")]
    fulls = {b: compile_one(args, "full", b * ways) for b in batches}
    baselines = [baseline_from_build(f) for f in fulls.values()]
    predictor = Predictor(tuple(baselines))
    every_fetched = Predictor(tuple(dataclasses.replace(b, backward_loop_peak_bytes=0)
                                    for b in baselines))
    lines = [f"# python benchmarks/gpu_schedule.py {' '.join(sys.argv[1:])}".rstrip(),
             f"{args.model} on {args.target}, seq {args.seq} (GiB; live peak per region of "
             "the schedule; deferred: held through the backward loop)",
             f"{'pdb':>3} {'names ' + args.choice:44} {'predicted':>9} {'compiled':>8} "
             f"{'error':>6} {'no headroom':>11} " + " ".join(f"{r:>8}" for r in REGIONS)
             + f" {'deferred':>8} {'HBM':>7}  largest at the peak"]
    for pdb in batches:
        lines.append(_row(pdb, "full", None, None, regions(fulls[pdb])))
        for count in range(1, len(names) + 1):
            for kept in itertools.combinations(names, count):
                policy = "names:" + ",".join(f"{n}={args.choice}" for n in kept)
                figures = regions(compile_one(args, policy, pdb * ways))
                predicted = predictor.predict(policy, pdb * ways).allocation_bytes
                fetched = every_fetched.predict(policy, pdb * ways).allocation_bytes
                lines.append(_row(pdb, ",".join(kept), predicted, fetched, figures))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        Path(args.out).write_text(text)
    return 0


def _row(pdb: int, kept: str, predicted: int | None, fetched: int | None,
         figures: tuple[dict[str, int], int, int, int, str]) -> str:
    peaks, deferred, allocation, hbm, largest = figures
    error = f"{predicted / allocation - 1:+6.1%}" if predicted else f"{'':>6}"
    error += f" {fetched / allocation - 1:+11.1%}" if fetched else f" {'':>11}"
    guess = f"{predicted / GIB:9.2f}" if predicted else f"{'':>9}"
    return (f"{pdb:>3} {kept:44} {guess} {allocation / GIB:8.2f} {error} "
            + " ".join(f"{peaks[r] / GIB:8.2f}" for r in REGIONS)
            + f" {deferred / GIB:8.2f} {hbm / GIB:7.0f}  {largest}")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-1b")
    parser.add_argument("--target", default="gpu:h100:1x1x1")
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--names", default="query_proj,attn_out,mlp_gate,mlp_up")
    parser.add_argument("--batches", default="4,8,12", help="per-device batches")
    parser.add_argument("--choice", default="device", choices=("device", "offload"))
    parser.add_argument("--out", help="also write the output to this file")
    return parser.parse_args()


if __name__ == "__main__":
    raise SystemExit(main())
