"""The users' run: Llama 3 70B on 4 x v6e-128 at 4096 x 3072 tokens, three remat policies.

Runs `hloscope sweep` as a user would (one compile at a time, cold cache unless --cache says
otherwise) and samples the resident memory of every process of the sweep — the parent and each
compile child — from /proc once a second. Prints the wall time, the peak RSS of the largest
process and of the whole tree, and the sweep's own rows (verdict, required bytes, FLOPs, step
estimate), and writes the sweep folder and `rss.json` beside it.

    python benchmarks/sweep_70b.py OUT_DIR [--policies full,nested:8,offload_carries]
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
    parser.add_argument("--policies", default="full,nested:8,offload_carries")
    parser.add_argument("--cache", default=None, help="cache folder (default: a fresh one)")
    args = parser.parse_args()
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
        rows = json.loads(output).get("variants", [])
    except json.JSONDecodeError:
        print(output[-3000:])
        return 1
    for row in rows:
        hlo = row.get("hlo") or {}
        print(f"{row.get('variant')}: status={row.get('status')} fits={row.get('fits')} "
              f"required={row.get('required_bytes')} flops={hlo.get('total_flops')} "
              f"step={row.get('step_seconds')}")
    return process.returncode


if __name__ == "__main__":
    raise SystemExit(main())
