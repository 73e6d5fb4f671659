"""hloscope's HLO load speed and memory against XLA's own C++ parser, both in the same run.

Two files: the >= 50 MB module generate_big_hlo.py writes, and a real scheduled TPU module (the
after-optimizations module libtpu writes for an unrolled Llama-3-8B train step on a v5e 2x2,
compiled deviceless by `hloscope build`; MaxText's own TPU dumps in the shared corpus are cut at
2000 lines, which XLA refuses). Three parsers, each in a fresh subprocess, alternating, best of
--repeat:

- XLA: `jaxlib._hlo.hlo_module_from_text` on the file's text, reading it included (what XLA's
  parser does: every attribute parsed, its semantic checks made);
- hloscope lazy: `hloscope.load(path)`, as users run it: every statement's structure, names,
  shapes and the semantic checks XLA's parser makes (hloscope.parsers.checks); attribute values
  are parsed when an analysis first asks for them;
- hloscope everything: the same load, then `hloscope.parsers.validate.validate`: every shape,
  operand list and attribute list parsed, every typed attribute (metadata, backend_config,
  dimensions, window, ...) converted.

Prints both throughputs, their ratio, and hloscope's peak RSS increase over its post-import
baseline divided by the file size; --out also writes the report there.

    python benchmarks/parse_speed.py [--file BIG.hlo] [--tpu-file TPU.hlo] [--repeat 5]
                                     [--out benchmarks/results/parse_speed.txt]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_FILE = HERE / "_generated" / "big.hlo"
DEFAULT_TPU_FILE = HERE / "_generated" / "tpu_llama8b_unrolled.hlo"
# The TPU module: the after-optimizations HLO of this build (its verdict, out of memory on a
# 16 GiB v5e, does not matter here: the scheduled module is complete).
TPU_BUILD = ["build", "--model", "llama-8b", "--target", "tpu:v5e:2x2", "--unrolled",
             "--policy", "full", "--quiet"]

_HLOSCOPE_RUN = r"""
import json, resource, sys, time
import hloscope
from hloscope.parsers.validate import validate
def rss_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
baseline = rss_kib()
start = time.perf_counter()
module = hloscope.load(sys.argv[1])
if sys.argv[2] == "everything":
    validate(module)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
count = sum(len(c.instructions) for c in module.computations.values())
print(json.dumps({"seconds": seconds, "baseline_kib": baseline, "peak_kib": peak,
                  "instructions": count}))
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
    generated(args.file)
    return args


def generated(path: Path) -> Path:
    """The big module, generated when absent."""
    if not path.exists():
        subprocess.run([sys.executable, str(HERE / "generate_big_hlo.py"), "-o", str(path)],
                       check=True)
    return path


def tpu_module(path: Path) -> Path:
    """The TPU module, compiled (deviceless, a few minutes) when absent."""
    if not path.exists():
        folder = path.parent / "tpu_build"
        subprocess.run([sys.executable, "-m", "hloscope", *TPU_BUILD, "-o", str(folder),
                        "--force"], check=False)
        shutil.copyfile(folder / "optimized_hlo.txt", path)
    return path


def compare(path: Path, repeat: int) -> list[str]:
    """XLA, hloscope lazy and hloscope everything on `path`, alternating, best of `repeat`."""
    runs: dict[str, list[dict]] = {"xla": [], "lazy": [], "everything": []}
    for _ in range(repeat):
        runs["xla"].append(run(XLA_RUN, path))
        for mode in ("lazy", "everything"):
            runs[mode].append(run(_HLOSCOPE_RUN, path, mode))
    size = path.stat().st_size
    xla = min(runs["xla"], key=lambda r: r["seconds"])
    xla_rate = size / 1e6 / xla["seconds"]
    lines = [f"file: {path.name} ({size / 1e6:.1f} MB, XLA counts {xla['instructions']} "
             f"instructions)",
             f"  XLA C++ parser:      {xla['seconds']:.2f} s  {xla_rate:.1f} MB/s"]
    for mode, label in (("lazy", "hloscope lazy:      "), ("everything", "hloscope everything:")):
        ours = min(runs[mode], key=lambda r: r["seconds"])
        rate = size / 1e6 / ours["seconds"]
        rss = max(r["peak_kib"] - r["baseline_kib"] for r in runs[mode]) * 1024 / size
        lines.append(f"  {label} {ours['seconds']:.2f} s  {rate:.1f} MB/s  ratio to XLA "
                     f"{rate / xla_rate:.2f}x  peak RSS increase / file size {rss:.2f}x  "
                     f"({ours['instructions']} instructions)")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--tpu-file", type=Path, default=DEFAULT_TPU_FILE)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    generated(args.file)
    report = [f"python {platform.python_version()}, {os.cpu_count()} cores, load average "
              f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} at the start; best of "
              f"{args.repeat}, alternating"]
    for path in (args.file, tpu_module(args.tpu_file)):
        for line in compare(path, args.repeat):
            print(line, flush=True)
            report.append(line)
    report.append(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end")
    print(report[0])
    print(report[-1])
    if args.out:
        args.out.write_text("\n".join(report) + "\n")


if __name__ == "__main__":
    main()
