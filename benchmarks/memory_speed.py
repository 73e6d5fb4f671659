"""hloscope's memory analysis speed on a >= 50 MB module, against XLA's C++ parser, in one run.

The analysis is everything `hloscope memory` computes for a program: the flattened schedule,
dataflow and phis, buffer aliasing, live ranges, the timeline, the peak and XLA's peak moment,
per-space peaks and the categories of the buffers live at the peak. The generated file's copies
lost their ENTRY marks, so each uncalled computation is analysed as a program (finding them is
not timed). It is timed after `hloscope.load` (a subprocess per run, best of --repeat), and with
the load included; XLA's parser time on the same file is the anchor:

    ratio = XLA parse seconds / hloscope seconds   (above 1: hloscope is faster)

    python benchmarks/memory_speed.py [--file BIG.hlo] [--repeat 3]
"""
from __future__ import annotations

from parse_speed import XLA_RUN, benchmark_arguments, best

_HLOSCOPE_RUN = r"""
import json, sys, time
import hloscope
from hloscope.analyses.memory.analysis import memory
start = time.perf_counter()
module = hloscope.load(sys.argv[1])
loaded = time.perf_counter()
called = {name for _, i in module.instructions() for name in i.called_computations}
roots = [name for name in module.computations if name not in called]
analysed = time.perf_counter()
results = [memory(module, root=root) for root in roots]
done = time.perf_counter()
print(json.dumps({"seconds": done - analysed, "load_seconds": loaded - start,
                  "programs": len(roots), "instructions": module.instruction_count,
                  "scheduled": sum(len(r.timeline) for r in results),
                  "buffers": sum(r.buffer_count for r in results)}))
"""



def main() -> None:
    args = benchmark_arguments(__doc__.splitlines()[0])
    size_mb = args.file.stat().st_size / 1e6
    ours = best(_HLOSCOPE_RUN, args.file, args.repeat)
    xla = best(XLA_RUN, args.file, args.repeat)
    analysis, with_load = ours["seconds"], ours["seconds"] + ours["load_seconds"]
    print(f"file: {args.file} ({size_mb:.1f} MB, {ours['instructions']} instructions, "
          f"{ours['programs']} programs, {ours['buffers']} buffers)")
    print(f"hloscope memory analysis: {analysis:.2f} s  {size_mb / analysis:.1f} MB/s "
          f"(+ load: {with_load:.2f} s  {size_mb / with_load:.1f} MB/s)")
    print(f"XLA C++ parser:           {xla['seconds']:.2f} s  {size_mb / xla['seconds']:.1f} MB/s")
    print(f"ratio (XLA parse / hloscope analysis): {xla['seconds'] / analysis:.2f}x; "
          f"with the load: {xla['seconds'] / with_load:.2f}x")


if __name__ == "__main__":
    main()
