"""hloscope's HLO text parsing speed and memory against XLA's own C++ parser, in one run.

Times `hloscope.load(path)` followed by everything `hloscope inspect` needs (its counts alone, and
with the FLOP and remat totals of the entry program), and XLA's parser
(`jaxlib._hlo.hlo_module_from_text`, reading the file included) on the same >= 50 MB file, each
in a fresh subprocess, best of --repeat runs. Prints both throughputs, their ratio, and
hloscope's peak RSS increase over its post-import baseline divided by the file size.

    python benchmarks/parse_speed.py [--file BIG.hlo] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_FILE = HERE / "_generated" / "big.hlo"

_HLOSCOPE_RUN = r"""
import json, resource, sys, time
import hloscope
def rss_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
baseline = rss_kib()
start = time.perf_counter()
module = hloscope.load(sys.argv[1])
result = hloscope.inspect(module, costs=sys.argv[2] == "costs")
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "baseline_kib": baseline, "peak_kib": peak,
                  "instructions": result.instruction_count}))
"""

XLA_RUN = r"""
import json, sys, time
from jaxlib import _hlo
start = time.perf_counter()
with open(sys.argv[1]) as handle:
    module = _hlo.hlo_module_from_text(handle.read())
seconds = time.perf_counter() - start
count = sum(len(c.instructions()) for c in module.computations())
print(json.dumps({"seconds": seconds, "instructions": count}))
"""


def run(code: str, path: Path, *args: str) -> dict:
    completed = subprocess.run([sys.executable, "-c", code, str(path), *args],
                               capture_output=True, text=True, check=True)
    return json.loads(completed.stdout.strip().splitlines()[-1])


def best(code: str, path: Path, repeat: int, *args: str) -> dict:
    runs = [run(code, path, *args) for _ in range(repeat)]
    return min(runs, key=lambda r: r["seconds"])


def benchmark_arguments(description: str) -> argparse.Namespace:
    """--file (generated when absent) and --repeat, shared by the benchmarks."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not args.file.exists():
        subprocess.run([sys.executable, str(HERE / "generate_big_hlo.py"), "-o", str(args.file)],
                       check=True)
    return args


def main() -> None:
    args = benchmark_arguments(__doc__.splitlines()[0])
    size_mb = args.file.stat().st_size / 1e6
    xla = best(XLA_RUN, args.file, args.repeat)
    xla_rate = size_mb / xla["seconds"]
    print(f"file: {args.file} ({size_mb:.1f} MB, XLA counts {xla['instructions']} instructions)")
    print(f"XLA C++ parser: {xla['seconds']:.2f} s  {xla_rate:.1f} MB/s")
    for label, mode in (("load + inspect counts", "counts"),
                        ("load + inspect with FLOP/remat totals", "costs")):
        ours = best(_HLOSCOPE_RUN, args.file, args.repeat, mode)
        ours_rate = size_mb / ours["seconds"]
        rss_ratio = (ours["peak_kib"] - ours["baseline_kib"]) * 1024 / args.file.stat().st_size
        print(f"hloscope {label}: {ours['seconds']:.2f} s  {ours_rate:.1f} MB/s  "
              f"ratio to XLA {ours_rate / xla_rate:.2f}x  peak RSS increase / file size "
              f"{rss_ratio:.2f}x  ({ours['instructions']} instructions)")


if __name__ == "__main__":
    main()
