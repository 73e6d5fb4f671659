"""hloscope's flops + remat analysis speed on a >= 50 MB module, against XLA's C++ parser.

The analysis is everything `hloscope flops` and `hloscope remat` compute: the cost of every
instruction of every computation, the charges of each top-level program (the generated file's
copies lost their ENTRY marks, so each uncalled computation is walked as a program), the four
breakdowns, and the remat counts and costs. It is timed after `hloscope.load` (a subprocess per
run, best of --repeat), and with the load included; XLA's parser time is the anchor:

    ratio = XLA parse seconds / hloscope seconds   (above 1: hloscope is faster)

    python benchmarks/analyze_speed.py [--file BIG.hlo] [--repeat 3]
"""
from __future__ import annotations

from parse_speed import XLA_RUN, benchmark_arguments, best

_HLOSCOPE_RUN = r"""
import json, sys, time
import hloscope
from hloscope.analyses.cost.attribution import charges
from hloscope.analyses.cost import CostAnalysis
from hloscope.analyses.cost.flops import breakdowns
from hloscope.gc_pause import paused_gc
from hloscope.analyses.cost.remat import remat
start = time.perf_counter()
module = hloscope.load(sys.argv[1])
loaded = time.perf_counter()
with paused_gc():  # as flops() and remat() do
    analysis = CostAnalysis(module)
    analysis.analyze_all()
    called = {name for _, i in module.instructions() for name in i.called_computations}
    roots = [name for name in module.computations if name not in called]
    charged = [c for root in roots for c in charges(analysis, root) if any(c.cost)]
    rows = breakdowns(charged, 3)
    result = remat(analysis, charged=charged)
done = time.perf_counter()
print(json.dumps({"seconds": done - loaded, "load_seconds": loaded - start,
                  "instructions": module.instruction_count, "programs": len(roots),
                  "charges": len(charged), "remat": result.remat_instructions}))
"""



def main() -> None:
    args = benchmark_arguments(__doc__.splitlines()[0])
    size_mb = args.file.stat().st_size / 1e6
    ours = best(_HLOSCOPE_RUN, args.file, args.repeat)
    xla = best(XLA_RUN, args.file, args.repeat)
    analysis, with_load = ours["seconds"], ours["seconds"] + ours["load_seconds"]
    print(f"file: {args.file} ({size_mb:.1f} MB, {ours['instructions']} instructions, "
          f"{ours['programs']} programs walked, {ours['charges']} charges, "
          f"{ours['remat']} recomputed instructions)")
    print(f"hloscope flops+remat analysis: {analysis:.2f} s  {size_mb / analysis:.1f} MB/s")
    print(f"hloscope load + analysis:      {with_load:.2f} s  {size_mb / with_load:.1f} MB/s")
    print(f"XLA C++ parser:                {xla['seconds']:.2f} s  "
          f"{size_mb / xla['seconds']:.1f} MB/s")
    print(f"ratio XLA parse / analysis:        {xla['seconds'] / analysis:.2f}x")
    print(f"ratio XLA parse / load + analysis: {xla['seconds'] / with_load:.2f}x")


if __name__ == "__main__":
    main()
