"""Where libtpu puts the f32 logits, and what that does to the allocation above the live peak.

Reads the build cache (compiles nothing): every `full` and every device-kept `names:` build of
the frontier benchmark's model, target and sequence (one micro-batch, no offloaded name, no
user flags, fits) that fixtures/predict/llama-v5e-squeezed.json records as not rematerialized by
libtpu. From each build's libtpu dumps (`*-buffer-assignment.txt`: offsets in the one temporary
allocation; `*-live-range.txt`: the flattened schedule) it prints:

- `loss`: whether the f32 logits f32[batch, seq, vocab] are made after the backward layer loop
  (`after`) or before it, while the kept stacks are live (`before`);
- the bytes of the forward layer loop's output (the scan's stacks: layer inputs and kept names)
  in the temporary allocation, the f32 logits' size and offset;
- `packing`: the temporary allocation above its own live peak;
- the predictor's error on XLA's allocation (`analyses.predict`, the fixture's baselines), and
  the error of the same predictor with `full`'s headroom above its layer span measured on the
  allocation (`full`'s allocation above its heap's top during the span) instead of on live bytes.

    python benchmarks/logits_placement.py [--model llama-1b] [--out FILE]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from hloscope.analyses.predict.baseline import Baseline, baseline_tokens
from hloscope.analyses.predict.model import Predictor
from hloscope.loader.libtpu_log_file import libtpu_log_text
from hloscope.loader.program import load_program
from hloscope.parsers.libtpu_log import parse_libtpu_log
from hloscope.workloads.cache import default_cache_dir

FIXTURE = Path(__file__).parent.parent / "fixtures" / "predict" / "llama-v5e-squeezed.json"
GIB = 2**30
MIB = 2**20


@dataclass(frozen=True)
class Layout:
    temp_bytes: int  # the temporary allocation
    live_peak_bytes: int  # its live peak (values live at one time of libtpu's schedule)
    span_top_bytes: int  # its heap's top during the layer loops (values over 1 MiB)
    stacks_bytes: int  # the forward layer loop's output in it
    logits_bytes: int
    logits_offset: int
    loss_after_loop: bool
    scheduler: str | None  # libtpu's min-memory scheduler's choice (list, dfs, post_order)


def layout(folder: Path, logits_shape: str) -> Layout | None:
    """The temporary allocation's layout of a build; None without libtpu's dumps or logits."""
    program = load_program(str(folder / "dump"))
    assignment, ranges, module = program.buffer_assignment, program.live_range, program.module
    if assignment is None or ranges is None or module is None:
        return None
    temp = max((a for a in assignment.allocations if a.color == 0 and a.parameter_number is None
                and not a.maybe_live_out and not a.is_constant), key=lambda a: a.size)
    intervals = ranges.by_key()
    logits = next(((v, intervals[v.key]) for v in temp.values
                   if str(v.shape).startswith(logits_shape) and v.key in intervals), None)
    if logits is None:
        return None
    entry = {i.name for i in module.computations[module.entry_name].instructions}
    span_start, forward, backward = _layer_loops(ranges.sequence, entry)
    live, top = _profile(temp.values, intervals, ranges.schedule_end + 1)
    stacks = sum(v.size for v in temp.values if v.key.startswith(ranges.sequence[forward] + "{"))
    log = libtpu_log_text(folder)
    return Layout(temp.size, max(live), max(top[span_start:backward + 1]), stacks,
                  logits[0].size, logits[0].offset, logits[1].start > backward,
                  parse_libtpu_log(log).min_memory_scheduler if log else None)


def _layer_loops(sequence: tuple[str, ...], entry: set[str]) -> tuple[int, int, int]:
    """(where the forward loop's body starts, the forward loop, the backward loop) in libtpu's
    flattened schedule, which puts a loop's body just before the loop."""
    loops = [t for t, name in enumerate(sequence) if name.startswith("while.") and name in entry]
    start = loops[0]
    while start > 0 and sequence[start - 1] not in entry:
        start -= 1
    return start, loops[0], loops[-1]


def _profile(values: list, intervals: dict, length: int) -> tuple[list[int], list[int]]:
    """Per time: the bytes live, and the heap's top (of values over 1 MiB: small ones fill gaps
    anywhere)."""
    live, top = [0] * length, [0] * length
    for value in values:
        interval = intervals.get(value.key)
        for t in range(interval.start, interval.end + 1) if interval else ():
            live[t] += value.size
            if value.size > MIB:
                top[t] = max(top[t], value.offset + value.size)
    return live, top


def builds(cache: Path, model: str, target: str, seq: int) -> dict[tuple[str, int], Path]:
    found: dict[tuple[str, int], Path] = {}
    for folder in sorted(p for p in cache.iterdir() if (p / "manifest.json").exists()):
        manifest = json.loads((folder / "manifest.json").read_text())
        config, variant = manifest.get("config", {}), manifest.get("variant", "")
        if (manifest.get("model") != model or manifest.get("target") != target
                or config.get("seq_len") != seq or config.get("micro_batches", 1) != 1
                or manifest.get("flags", {}).get("user") or manifest.get("error")
                or "offload" in variant or not (variant == "full" or variant.startswith("names:"))):
            continue
        found.setdefault((variant, config["batch"]), folder)
    return found


def main() -> int:
    args = _arguments()
    record = json.loads(FIXTURE.read_text())[args.model]
    target, seq = record["target"], record["seq"]
    baselines = [Baseline.from_dict(b) for b in record["baselines"]]
    vocab = baselines[0].config["vocab"]
    ways = baselines[0].config["batch"] * seq // baseline_tokens(baselines[0])  # batch shards
    cache = default_cache_dir() / "builds"
    if not cache.is_dir():
        print(f"no build cache at {cache}: run benchmarks/frontier_vs_maxtext.py for "
              f"{args.model} first", file=sys.stderr)
        return 2
    found = builds(cache, args.model, target, seq)
    spans = {}
    for baseline in baselines:
        folder = found.get(("full", baseline.config["batch"]))
        shape = f"f32[{baseline.config['batch'] // ways},{seq},{vocab}]"
        figures = layout(folder, shape) if folder else None
        if figures is None:
            print(f"`full` at batch {baseline.config['batch']}: no libtpu dumps in the build "
                  f"cache, or no {shape} buffer in its temporary allocation", file=sys.stderr)
            return 2
        spans[baseline.config["batch"]] = figures
    measured = Predictor(tuple(baselines))
    on_allocation = Predictor(tuple(_headroom_on_allocation(b, spans[b.config["batch"]])
                                    for b in baselines))
    lines = [f"# python benchmarks/logits_placement.py {' '.join(sys.argv[1:])}".rstrip(),
             f"{args.model} on {target}, seq {seq}: `full` and device-kept programs libtpu did "
             "not rematerialize (GiB; errors: predicted / XLA's allocation - 1)",
             f"{'pdb':>3} {'policy':58} {'order':10} {'loss':6} {'stacks':>6} {'logits':>6} "
             f"{'offset':>6} {'packing':>7} {'error':>7} {'on alloc':>8}"]
    rows = []
    for compiled in record["compiled"]:
        key = (compiled["policy"], compiled["batch"])
        if compiled["libtpu_remat"] or not compiled["allocation_bytes"] or key not in found:
            continue
        pdb = compiled["batch"] // ways
        figures = layout(found[key], f"f32[{pdb},{seq},{vocab}]")
        if figures is None:
            continue
        errors = [p.predict(*key).allocation_bytes / compiled["allocation_bytes"] - 1
                  for p in (measured, on_allocation)]
        rows.append((f"{pdb} {compiled['policy'].removeprefix('names:')}", figures, errors))
        lines.append(
            f"{pdb:>3} {compiled['policy'].removeprefix('names:'):58} {figures.scheduler!s:10} "
            f"{'after' if figures.loss_after_loop else 'before':6} "
            f"{figures.stacks_bytes / GIB:6.2f} {figures.logits_bytes / GIB:6.2f} "
            f"{figures.logits_offset / GIB:6.2f} "
            f"{(figures.temp_bytes - figures.live_peak_bytes) / GIB:7.2f} "
            f"{errors[0]:+7.1%} {errors[1]:+8.1%}")
    lines += _summary(rows)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        Path(args.out).write_text(text)
    return 0


def _summary(rows: list[tuple[str, Layout, list[float]]]) -> list[str]:
    before = [r for r in rows if not r[1].loss_after_loop]
    after = [r for r in rows if r[1].loss_after_loop]
    dfs = [r for r in rows if r[1].scheduler == "dfs"]
    lines = [f"loss before the backward loop: {len(before)} of {len(rows)} "
             f"({sum(r[1].scheduler == 'dfs' for r in before)} of them scheduled dfs; "
             f"dfs chosen {len(dfs)} times in all)"]
    def bottom(row: tuple[str, Layout, list[float]]) -> bool:
        return row[1].logits_offset < 64 * MIB

    room = [r for r in after if r[1].stacks_bytes >= r[1].logits_bytes]
    small = [r for r in after if r not in room]
    lines.append(f"loss after it, the f32 logits at the bottom of the heap (offset under 64 MiB): "
                 f"{sum(map(bottom, room))} of the {len(room)} programs whose forward loop's "
                 f"stacks are at least their size; {sum(map(bottom, small))} of the {len(small)} "
                 f"others ({', '.join(r[0] for r in small if bottom(r)) or '-'})")
    def packing(row: tuple[str, Layout, list[float]]) -> float:
        return (row[1].temp_bytes - row[1].live_peak_bytes) / GIB

    above = [r for r in after if not bottom(r)]
    rest = [r for r in rows if r not in above]
    lines.append(f"packing (the temporary allocation above its live peak) where they sit above "
                 f"the bottom: {min(map(packing, above)):.2f} to {max(map(packing, above)):.2f} "
                 f"GiB; in the others {min(map(packing, rest)):.2f} to "
                 f"{max(map(packing, rest)):.2f} GiB")
    for name, index in (("the predictor", 0), ("headroom on the allocation", 1)):
        errors = [r[2][index] for r in rows]
        lines.append(f"{name}: {min(errors):+.1%} to {max(errors):+.1%}, "
                     f"{sum(abs(e) <= 0.05 for e in errors)} of {len(errors)} within 5%")
    return lines


def _headroom_on_allocation(baseline: Baseline, figures: Layout) -> Baseline:
    """The baseline whose live headroom above its span is its allocation above its span's heap
    top instead (the predictor reads live peak - span peak)."""
    headroom = figures.temp_bytes - figures.span_top_bytes
    return dataclasses.replace(baseline,
                               layer_span_peak_bytes=baseline.live_peak_bytes - headroom)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-1b", choices=("llama-1b", "llama-8b"))
    parser.add_argument("--out", help="also write the output to this file")
    return parser.parse_args()


if __name__ == "__main__":
    raise SystemExit(main())
