"""hloscope's HLO text parsing speed and memory against XLA's own C++ parser, in one run.

Times `hloscope.load(path)` followed by everything `hloscope inspect` needs, and XLA's parser
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
result = hloscope.inspect(module)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "baseline_kib": baseline, "peak_kib": peak,
                  "instructions": result.instruction_count}))
"""

_XLA_RUN = r"""
import json, sys, time
from jaxlib import _hlo
start = time.perf_counter()
with open(sys.argv[1]) as handle:
    module = _hlo.hlo_module_from_text(handle.read())
seconds = time.perf_counter() - start
count = sum(len(c.instructions()) for c in module.computations())
print(json.dumps({"seconds": seconds, "instructions": count}))
"""


def run(code: str, path: Path) -> dict:
    completed = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                               text=True, check=True)
    return json.loads(completed.stdout.strip().splitlines()[-1])


def best(code: str, path: Path, repeat: int) -> dict:
    runs = [run(code, path) for _ in range(repeat)]
    return min(runs, key=lambda r: r["seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not args.file.exists():
        subprocess.run([sys.executable, str(HERE / "generate_big_hlo.py"), "-o", str(args.file)],
                       check=True)
    size_mb = args.file.stat().st_size / 1e6
    ours = best(_HLOSCOPE_RUN, args.file, args.repeat)
    xla = best(_XLA_RUN, args.file, args.repeat)
    ours_rate, xla_rate = size_mb / ours["seconds"], size_mb / xla["seconds"]
    rss_ratio = (ours["peak_kib"] - ours["baseline_kib"]) * 1024 / args.file.stat().st_size
    print(f"file: {args.file} ({size_mb:.1f} MB, {ours['instructions']} instructions; "
          f"XLA counts {xla['instructions']})")
    print(f"hloscope load+inspect: {ours['seconds']:.2f} s  {ours_rate:.1f} MB/s")
    print(f"XLA C++ parser:        {xla['seconds']:.2f} s  {xla_rate:.1f} MB/s")
    print(f"throughput ratio (hloscope / XLA): {ours_rate / xla_rate:.2f}x")
    print(f"peak RSS increase / file size: {rss_ratio:.2f}x")


if __name__ == "__main__":
    main()
