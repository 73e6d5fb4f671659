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
    ranked = hloscope.sweep(model="tiny", target="tpu:v6e-128:slices=4", output="sweep_dir/")
    request = hloscope.sweep_request(model="tiny", target=hloscope.Target("tpu", "v5e", "2x2"))
    ranked = hloscope.run_sweep(request)         # what `sweep` does with its keywords
    frontier = hloscope.read_frontier("sweep_dir/")  # a --search frontier folder, typed

Every result has `.to_dict()` (the `--format json` document) and `.to_pandas()` (one DataFrame
per table; a dict of them when there are several), and shows itself in Jupyter: its report's
tables and charts (`_repr_html_`), or Markdown where a front end has no HTML.

`__all__` is the public API (docs/api.md); the modules behind it are hloscope's own and may change.
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
    run_sweep,
    snapshot,
    step_policies,
    sweep,
    sweep_request,
    trace,
)
from hloscope.configs.targets import Target
from hloscope.errors import HloscopeError, InputError, ParseError, UsageError
from hloscope.formats.frontier import FrontierRecord, read_frontier
from hloscope.loader.hlo_input import load_all
from hloscope.loader.hlo_input import load_input as load
from hloscope.loader.program import Program, load_program
from hloscope.model.module import Computation, HloModule
from hloscope.reports import notebook as _notebook  # noqa: F401  (registers the notebook views)
from hloscope.reports import tables as _tables  # noqa: F401  (registers to_pandas()'s tables)
from hloscope.sweeps.core import FrontierOptions, SweepRequest, SweepResult
from hloscope.sweeps.frontier import FrontierResult
from hloscope.version import __version__

__all__ = [
    "Computation",
    "CostOptions",
    "FlopsResult",
    "FrontierOptions",
    "FrontierRecord",
    "FrontierResult",
    "HloModule",
    "HloscopeError",
    "InputError",
    "InspectResult",
    "MemoryResult",
    "ParseError",
    "Program",
    "RematResult",
    "SweepRequest",
    "SweepResult",
    "Target",
    "UsageError",
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
    "oom_step",
    "policies",
    "profile",
    "read_frontier",
    "remat",
    "report",
    "run_sweep",
    "snapshot",
    "step_policies",
    "sweep",
    "sweep_request",
    "trace",
    "__version__",
]
