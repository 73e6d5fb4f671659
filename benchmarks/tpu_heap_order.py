"""libtpu's two packings of its HBM heap against what its log states, on the cached TPU builds.

libtpu logs (heap_simulator.h, INFO) the size of its first packing of the HBM heap's arrays
(`Primary algorithm finished with size: N`), or, where that is over its limit, both and the
limit (`Primary algorithm failed or exceeded limit (N vs L). Running fallback algorithm via lazy
replay.`, `Fallback algorithm finished with size: F`). For every `hloscope build` folder of a
TPU target in the cache whose compile.log has those lines, prints them beside hloscope's replay
from the HLO text (`heap.tpu_hbm_heaps`: best fit in allocation order; XLA's smaller of the
spatial and temporal packings) and the reserve the limit leaves: the usable HBM less the limit
less the buffer assignment's other HBM allocations (calibration/tpu.py's HBM_HEAP_RESERVE). Last,
how many all-gather values libtpu put in a maybe-live-out allocation, and how many in the heap.

`python benchmarks/tpu_heap_order.py [--out FILE]`; no jax, no compile.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
FIRST = re.compile(r"Primary algorithm (?:finished with size: (\d+)|failed or exceeded limit "
                   r"\((\d+) vs (\d+)\))")
FALLBACK = re.compile(r"Fallback algorithm finished with size: (\d+)")


def logged(log: str) -> tuple[int, int | None, int | None] | None:
    """(first packing, limit, fallback) as the log states them; None without the lines."""
    first = FIRST.search(log)
    if first is None:
        return None
    if first.group(1):
        return int(first.group(1)), None, None
    fallback = FALLBACK.search(log)
    return int(first.group(2)), int(first.group(3)), int(fallback.group(1)) if fallback else None


def measure(folder: Path) -> str | None:
    from hloscope.analyses.memory.heap import place_buffers, tpu_hbm_heaps
    from hloscope.analyses.memory.liveness import analyze_liveness
    from hloscope.configs.targets import parse_target
    from hloscope.devices import get_device
    from hloscope.loader.program import load_program
    from hloscope.parsers.xla_memory import space_allocations

    meta = json.loads((folder / "manifest.json").read_text())
    log = folder / "compile.log"
    found = logged(log.read_text(errors="replace")) if log.exists() else None
    if found is None or not str(meta.get("target", "")).startswith("tpu"):
        return None
    program = load_program(folder, None)
    first, fallback = tpu_hbm_heaps(place_buffers(analyze_liveness(program.module), "tpu"))
    usable = get_device(parse_target(meta["target"]).device.name).usable_memory_bytes or 0
    spaces = {s.color: s for s in space_allocations(program.xla_memory.read_buffer_assignment())}
    heap = max((a.size for a in program.xla_memory.read_buffer_assignment().allocations
                if a.color == 0 and a.is_preallocated_temp), default=0)
    others = spaces[0].total_bytes - heap
    libtpu_first, limit, libtpu_fallback = found
    reserve = "-" if limit is None else f"{usable - limit - others:,}"
    name = f"{meta.get('model')} {meta.get('variant')} {meta.get('target')}"[:44]
    return (f"{name:<44} {libtpu_first:>15,} {first - libtpu_first:>+12,} {fallback:>15,} "
            f"{'-' if limit is None else f'{limit:,}':>15} "
            f"{'-' if libtpu_fallback is None else f'{libtpu_fallback:,}':>15} "
            f"{'-' if libtpu_fallback is None else f'{fallback - libtpu_fallback:+,}':>9} "
            f"{reserve:>14}")


def gathers(folder: Path) -> tuple[int, int]:
    """(all-gather values in a maybe-live-out allocation, in the HBM heap) of its assignment."""
    from hloscope.parsers.xla_memory import find_memory_artifacts

    assignment = find_memory_artifacts(folder / "dump").read_buffer_assignment()
    live_out = heap = 0
    for allocation, value in ([] if assignment is None else assignment.values()):
        if re.fullmatch(r"all-gather\.\d+\{\}", value.key):
            live_out += allocation.maybe_live_out
            heap += allocation.color == 0 and allocation.is_preallocated_temp
    return live_out, heap


def main() -> int:
    from hloscope.workloads.cache import default_cache_dir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    header = (f"{'build':<44} {'libtpu first':>15} {'replay':>12} {'XLA order':>15} {'limit':>15} "
              f"{'libtpu fallback':>15} {'replay':>9} {'reserve':>14}")
    lines = ["# libtpu's HBM heap (arrays, bytes) as its log states it vs hloscope's replay "
             "(difference); XLA order: the replay's",
             "# smaller of the spatial and temporal packings; reserve: usable HBM - limit - other "
             "HBM allocations",
             "# `python benchmarks/tpu_heap_order.py`", header]
    seen = set()
    gathered = [0, 0, 0]
    for folder in sorted((default_cache_dir() / "builds").glob("*/")):
        if not (folder / "manifest.json").exists():
            continue
        target = json.loads((folder / "manifest.json").read_text()).get("target") or ""
        if target.startswith("tpu") and any((folder / "dump").glob("*buffer-assignment.txt")):
            live_out, heap = gathers(folder)
            gathered = [gathered[0] + 1, gathered[1] + live_out, gathered[2] + heap]
        line = measure(folder)
        if line is not None and line not in seen:
            seen.add(line)
            lines.append(line)
    lines.append(f"\nall-gather values in a maybe-live-out allocation: {gathered[1]} "
                 f"(in the HBM heap: {gathered[2]}) over the {gathered[0]} TPU builds' buffer "
                 "assignments")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
