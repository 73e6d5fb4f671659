"""The users' run: Llama 3 70B on 4 x v6e-128 at 4096 x 3072 tokens, three remat policies.

Runs `hloscope sweep` as a user would (one compile at a time, cold cache unless --cache says
otherwise) and samples the resident memory of every process of the sweep — the parent and each
compile child — from /proc once a second. Prints the wall time, the peak RSS of the largest
process and of the whole tree, and the sweep's own rows (verdict, required bytes, FLOPs, step
estimate), and writes the sweep folder and `rss.json` beside it.

    python benchmarks/sweep_70b.py OUT_DIR [--policies none,full,nested:8,offload_carries]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


def children_of(pid: int) -> list[int]:
    """Every descendant of `pid` (from /proc/*/stat parent ids)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        current = frontier.pop()
        kids = [child for child, parent in parents.items() if parent == current]
        found += kids
        frontier += kids
    return found


def rss_bytes(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


class RssSampler(threading.Thread):
    """Samples the RSS of a process tree until stopped; keeps the peaks."""

    def __init__(self, root: int, interval: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.peak_process = 0
        self.peak_tree = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            sizes = [rss_bytes(pid) for pid in [self.root, *children_of(self.root)]]
            self.peak_process = max(self.peak_process, *sizes)
            self.peak_tree = max(self.peak_tree, sum(sizes))
            self.stopped.wait(self.interval)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--policies", default="none,full,nested:8,offload_carries")
    parser.add_argument("--cache", default=None, help="cache folder (default: a fresh one)")
    parser.add_argument("--summarise", action="store_true",
                        help="print OUT_DIR's sweep.json and rss.json; compile nothing")
    args = parser.parse_args()
    if args.summarise:
        print((args.out / "rss.json").read_text().strip())
        document = json.loads((args.out / "sweep.json").read_text())
        print("\n".join(summary_lines(document) + layer_stack_lines(document)
                        + closed_form_lines(document)))
        return 0
    cache = args.cache or str(args.out.with_name(args.out.name + "-cache"))
    command = [sys.executable, "-m", "hloscope", "sweep", "--model", "llama-70b",
               "--target", "tpu:v6e-128", "--num-slices", "4", "--seq", "4096",
               "--batch", "3072", "--policies", args.policies, "--jobs", "1",
               "--format", "json", "--cache-dir", cache, "-o", str(args.out)]
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    sampler = RssSampler(process.pid)
    sampler.start()
    output, _ = process.communicate()
    sampler.stopped.set()
    sampler.join()
    wall = time.monotonic() - started
    figures = {"command": command, "returncode": process.returncode, "wall_seconds": round(wall),
               "peak_process_rss_bytes": sampler.peak_process,
               "peak_tree_rss_bytes": sampler.peak_tree}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "rss.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    try:
        document = json.loads(output)
    except json.JSONDecodeError:
        print(output[-3000:])
        return 1
    print("\n".join(summary_lines(document) + layer_stack_lines(document)
                    + closed_form_lines(document)))
    return process.returncode


def summary_lines(document: dict) -> list[str]:
    """The sweep's verdict and, per variant, what decides it (bytes per device)."""
    gib = 1 << 30
    lines = [f"{document['target_description']}; winner: {document['winner']}"]
    for row in document["variants"]:
        host = row.get("host_fit_reason") or ""
        lines.append(
            f"{row['variant']}: {row['outcome']}; required {row['required_bytes'] / gib:.2f} GiB "
            f"of {row['capacity_bytes'] / gib:.2f} GiB ({row['required_source']}); live peak "
            f"{row['live_peak_bytes'] / gib:.2f} GiB; FLOPs {row['total_flops'] / 1e15:.3f} P "
            f"(forward {row['forward_flops'] / 1e15:.3f} P, recomputed "
            f"{row['recompute_flops'] / 1e15:.3f} P); to host {row['to_host_bytes'] / gib:.1f} "
            f"GiB; DCN {row['dcn_collective_bytes'] / gib:.2f} GiB, ICI "
            f"{row['ici_collective_bytes'] / gib:.1f} GiB; step {_seconds(row, 'overlapped')}"
            f"-{_seconds(row, 'serial')} s; compiled in {row['compile_seconds']:.0f} s; "
            f"{row['reason']}{'; ' + host if host else ''}")
    return lines


def layer_stack_flops(build_folder: str) -> dict[str, int]:
    """FLOPs per device of the layer scan alone (op_names under `layers`), by phase: the LM head
    and the optimizer left out, as the note's 3·L·F / 4·L·F / 5·L·F count. The copies XLA's
    rematerialization pass runs beyond one per original instruction (libtpu's own remat of a
    program over HBM, e.g. a second attention output projection in `none`'s forward) are not
    in those closed forms, which count the program JAX wrote: they are taken out of their phase
    and reported as `xla_added`."""
    from hloscope.analyses.cost.flops import cost_analysis, costed_charges
    from hloscope.analyses.cost.phases import scope_path
    from hloscope.analyses.cost.remat import xla_added_charges
    from hloscope.loader.hlo_input import load_input

    def in_stack(charge) -> bool:
        return bool(charge.op_name) and "layers" in scope_path(charge.op_name)

    charged = costed_charges(cost_analysis(load_input(build_folder)))
    added = {id(charge) for charge in xla_added_charges(charged)}
    sums: dict[str, int] = {}
    for charge in filter(in_stack, charged):
        key = "xla_added" if id(charge) in added else str(charge.phase)
        sums[key] = sums.get(key, 0) + charge.cost.flops
    return sums


def layer_stack_lines(document: dict) -> list[str]:
    """delta (the share of a block's forward JAX does not recompute under full remat) from the
    offload_carries build (full remat, carries on the host), and the closed-form ratios, on the
    layer stack without what XLA's own rematerialization adds (listed as xla_added)."""
    stacks = {row["variant"]: layer_stack_flops(row["build_folder"])
              for row in document["variants"] if row.get("build_folder")}
    lines = [f"layer stack {name}: " + ", ".join(f"{phase} {flops / 1e15:.4f} P"
                                                for phase, flops in sorted(sums.items()))
             for name, sums in stacks.items()]
    stacks = {name: {phase: flops for phase, flops in sums.items() if phase != "xla_added"}
              for name, sums in stacks.items()}
    full, nested = stacks.get("offload_carries"), stacks.get("nested:8")
    if full and nested:
        forward = full["forward"]
        delta = 1 - full.get("recompute", 0) / forward
        measured = sum(nested.values()) / sum(full.values())
        predicted = (5 - delta) / (4 - delta)
        lines.append(f"delta = 1 - recompute/forward = {delta:.4f}; nested/full layer-stack FLOPs "
                     f"{measured:.4f} vs (5-delta)/(4-delta) = {predicted:.4f} "
                     f"({measured / predicted - 1:+.2%}); backward/forward "
                     f"{full['backward'] / forward:.4f}")
    none = stacks.get("none")
    if full and none:
        measured = sum(full.values()) / sum(none.values())
        predicted = (4 - delta) / 3
        lines.append(f"full/none layer-stack FLOPs {measured:.4f} vs (4-delta)/3 = "
                     f"{predicted:.4f} ({measured / predicted - 1:+.2%}); none's backward/forward "
                     f"{none['backward'] / none['forward']:.4f}")
    return lines


# docs/llama-70b.md: Llama 3 70B, bf16 parameters with fp32 master, mu and nu (AdamW), FSDP over
# the 128 chips of a slice (data parallel over the 4 slices), 6 sequences of 4096 per device,
# blockwise attention (512 x 512 blocks) and loss.
PARAMETERS = 70_553_706_496
LAYERS, WIDTH, MLP, HEADS, KV_HEADS, HEAD = 80, 8192, 28672, 64, 8, 128
LOCAL_BATCH, SEQ, FSDP, BLOCK = 6, 4096, 128, 512
LAYER_PARAMETERS = LAYERS * (WIDTH * (HEADS + 2 * KV_HEADS) * HEAD + HEADS * HEAD * WIDTH
                             + 3 * WIDTH * MLP + 2 * WIDTH)
KEPT_CARRIES = {"full": LAYERS, "nested:8": LAYERS // 8 + 8, "offload_carries": 0}


def closed_form_terms() -> dict[str, int]:
    """The policy-independent terms of the closed form, bytes per device."""
    carry = LOCAL_BATCH * SEQ * WIDTH * 2
    return {
        "state (2+4+4+4 B/param / FSDP)": 14 * PARAMETERS // FSDP,
        "MLP [b,s,f] bf16 x4": 4 * LOCAL_BATCH * SEQ * MLP * 2,
        "[b,s,h] bf16 x7": 7 * carry,
        "[b,s,h] fp32 dq accumulator": LOCAL_BATCH * SEQ * WIDTH * 4,
        "layer-stack weight gradients bf16 / FSDP": 2 * LAYER_PARAMETERS // FSDP,
        "gathered MLP weights bf16 x3": 3 * WIDTH * MLP * 2,
        "one block pair's scores fp32 + bf16": LOCAL_BATCH * HEADS * BLOCK * BLOCK * 6,
    }


def closed_form_bytes(policy: str) -> int:
    """state + kept carries x one carry + the backward working set of one layer."""
    carry = LOCAL_BATCH * SEQ * WIDTH * 2
    return sum(closed_form_terms().values()) + KEPT_CARRIES[policy] * carry


def closed_form_lines(document: dict) -> list[str]:
    gib = 1 << 30
    terms = closed_form_terms()
    lines = ["closed form (docs/llama-70b.md): " + ", ".join(
        f"{name} {size / gib:.3f} GiB" for name, size in terms.items())]
    for row in document["variants"]:
        if row["variant"] in KEPT_CARRIES:
            predicted = closed_form_bytes(row["variant"])
            required = row["required_bytes"]
            lines.append(
                f"{row['variant']}: closed form {predicted / gib:.2f} GiB "
                f"({KEPT_CARRIES[row['variant']]} carries); XLA required "
                f"{required / gib:.2f} GiB ({predicted / required - 1:+.1%});"
                f" live peak {row['live_peak_bytes'] / gib:.2f} GiB "
                f"({predicted / row['live_peak_bytes'] - 1:+.1%})")
    return lines


def _seconds(row: dict, bound: str) -> str:
    value = row.get(f"{bound}_seconds")
    return "n/a" if value is None else f"{value:.2f}"


if __name__ == "__main__":
    raise SystemExit(main())
