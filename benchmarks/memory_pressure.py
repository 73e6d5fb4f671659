"""The same programs compiled for a chip with little HBM and for one with plenty: where libtpu
fits a program into the HBM by itself, the predictor (which adds kept bytes to a compiled `full`)
over-predicts the small chip's allocation but not the large one's.

For each (policy, per-device batch) the program is compiled for --target (v5e:2x2, 15.75 GiB
usable) and --roomy (v5p:2x2x1, 95.7 GiB: the same 4-device data-parallel mesh, the same XLA TPU
compiler); each target's prediction comes from its own `full` compiled at that batch. Prints the
allocations (XLA's memory-usage report) and each prediction's error.

    python benchmarks/memory_pressure.py [--model llama-1b] [--seq 2048] [--target T]
        [--roomy T] [--programs "names:query_proj=device@4;..."] [--out FILE]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import hloscope
from hloscope.analyses.predict.baseline import mesh_ways
from hloscope.analyses.predict.model import Predictor
from hloscope.configs.presets import preset_config
from hloscope.sweeps.frontier_run import baseline_from_build
from hloscope.sweeps.grid import Grid
from hloscope.units import format_bytes
from hloscope.workloads.cache import default_cache_dir

PROGRAMS = (("names:mlp_gate=device,mlp_up=device", 3),
            ("names:query_proj=device,mlp_gate=device,mlp_up=device", 4),
            ("names:query_proj=device,attn_out=device", 6),
            ("names:mlp_gate=device", 6),
            ("names:mlp_gate=device,mlp_up=device", 6),
            ("names:query_proj=device", 7),
            ("names:mlp_gate=device", 7))
"""Device-kept candidates the llama-1b frontier benchmark compiled on v5e (its largest errors)."""


def compile_one(args: argparse.Namespace, target: str, policy: str, batch: int):
    result = hloscope.sweep(model=args.model, policies=[policy], target=target,
                            cache=default_cache_dir(), grid=Grid((args.seq,), (batch,)))
    outcome = result.outcomes[0]
    return outcome.figures.required_bytes, outcome.folder


def main() -> int:
    args = _arguments()
    ways = mesh_ways(preset_config(args.model, seq_len=args.seq), args.target).batch
    lines = [f"# python benchmarks/memory_pressure.py {' '.join(sys.argv[1:])}",
             f"{args.model}, seq {args.seq}: {args.target} against {args.roomy}",
             "policy  per-device batch  |  target: compiled / predicted (error)  |  "
             "roomy: compiled / predicted (error)"]
    programs = PROGRAMS if not args.programs else tuple(
        (item.rsplit("@", 1)[0], int(item.rsplit("@", 1)[1])) for item in args.programs.split(";"))
    fulls: dict[int, list[str]] = {}
    for policy, pdb in programs:
        cells = []
        for target in (args.target, args.roomy):
            batch = pdb * ways
            full_bytes, full_folder = compile_one(args, target, "full", batch)
            fulls.setdefault(pdb, []).append(format_bytes(full_bytes))
            predictor = Predictor((baseline_from_build(Path(full_folder)),))
            compiled, _ = compile_one(args, target, policy, batch)
            predicted = predictor.predict(policy, batch).device_bytes
            cells.append(f"{format_bytes(compiled)} / {format_bytes(predicted)} "
                         f"({predicted / compiled - 1:+.1%})")
        lines.append(f"{policy}  {pdb}  |  {cells[0]}  |  {cells[1]}")
    lines += ["", f"full (the baseline) per-device batch: {args.target} / {args.roomy}"]
    lines += [f"  {pdb}: {' / '.join(sizes[:2])}" for pdb, sizes in sorted(fulls.items())]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-1b")
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--target", default="tpu:v5e:2x2")
    parser.add_argument("--roomy", default="tpu:v5p:2x2x1")
    parser.add_argument("--programs", default=None,
                        help="POLICY@PER_DEVICE_BATCH;... (default: PROGRAMS)")
    parser.add_argument("--out", type=Path, default=None)
    return parser.parse_args()


if __name__ == "__main__":
    raise SystemExit(main())
