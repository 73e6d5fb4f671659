"""hloscope: read XLA HLO as compilers write it, and explain its FLOPs, memory and remat.

Importing hloscope never imports jax or pandas (jax: `from_jax` only; pandas: `to_pandas()`).

    module = hloscope.load("dump_dir/")          # a file, .gz, dump folder, "-" or HLO text
    program = hloscope.load_program("build_dir/")  # the module and its side files, found once
    module = hloscope.from_jax(step, state, batch, target="tpu:v5e:2x2")  # compile and load
    summary = hloscope.inspect(module)           # op counts, parameters, outputs, FLOP totals
    costs = hloscope.flops(module, by="layer")   # FLOPs by opcode, scope, layer and phase
    recomputed = hloscope.remat(module)          # what jax.checkpoint and XLA's pass recompute
    peak = hloscope.memory(module)               # the live peak, its buffers, the timeline
    why = hloscope.oom(module, device="v5e")     # does it fit, and what would make it fit
    hloscope.report(module, output="report.html")  # one self-contained HTML page
    baseline = hloscope.snapshot(module, output="baseline.json")  # the figures CI keeps
    verdict = hloscope.check(module, "baseline.json", max_peak_increase="2%")  # the CI gate
    timings = hloscope.trace("profile_dir/")     # a profiler trace joined to the HLO
    profiled = hloscope.profile("profile_dir/", model="tiny", policy="full")  # run and trace
    built = hloscope.build("out/", model="tiny", policy="full", target="tpu:v5e:2x2")
    ranked = hloscope.sweep(model="tiny", target="tpu:v5e:2x2", output="sweep_dir/")

Every result has `.to_dict()` (the `--format json` document) and `.to_pandas()` (one DataFrame
per table; a dict of them when there are several), and shows itself in Jupyter: its report's
tables and charts (`_repr_html_`), or Markdown where a front end has no HTML.
"""
from __future__ import annotations

from hloscope.analyses.cost import CostOptions
from hloscope.analyses.cost.flops import FlopsResult
from hloscope.analyses.cost.remat import RematResult
from hloscope.analyses.memory.analysis import MemoryResult
from hloscope.analyses.summary.inspect import InspectResult
from hloscope.api import (
    build,
    check,
    compare,
    flops,
    from_jax,
    inspect,
    memory,
    oom,
    oom_step,
    policies,
    profile,
    remat,
    report,
    snapshot,
    step_policies,
    sweep,
    trace,
)
from hloscope.errors import HloscopeError, InputError, ParseError
from hloscope.loader.hlo_input import load_all
from hloscope.loader.hlo_input import load_input as load
from hloscope.loader.program import Program, load_program
from hloscope.model.module import Computation, HloModule
from hloscope.reports import notebook as _notebook  # noqa: F401  (registers the notebook views)
from hloscope.reports import tables as _tables  # noqa: F401  (registers to_pandas()'s tables)
from hloscope.version import __version__

__all__ = [
    "Computation",
    "CostOptions",
    "FlopsResult",
    "HloModule",
    "HloscopeError",
    "InputError",
    "InspectResult",
    "MemoryResult",
    "ParseError",
    "Program",
    "RematResult",
    "build",
    "check",
    "compare",
    "flops",
    "from_jax",
    "inspect",
    "load",
    "load_all",
    "load_program",
    "memory",
    "oom",
    "policies",
    "oom_step",
    "profile",
    "remat",
    "report",
    "__version__",
    "snapshot",
    "step_policies",
    "sweep",
    "trace",
]
