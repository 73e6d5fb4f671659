"""hloscope: read XLA HLO as compilers write it, and explain its FLOPs, memory and remat.

Importing hloscope never imports jax or pandas (jax: `from_jax` only; pandas: `to_pandas()`).

    module = hloscope.load("dump_dir/")          # a file, .gz, dump folder, "-" or HLO text
    module = hloscope.from_jax(step, state, batch, target="tpu:v5e:2x2")  # compile and load
    summary = hloscope.inspect(module)           # op counts, parameters, outputs, FLOP totals
    costs = hloscope.flops(module, by="layer")   # FLOPs by opcode, scope, layer and phase
    recomputed = hloscope.remat(module)          # what jax.checkpoint and XLA's pass recompute
    peak = hloscope.memory(module)               # the live peak, its buffers, the timeline
    why = hloscope.oom(module, device="v5e")     # does it fit, and what would make it fit
    hloscope.report(module, output="report.html")  # one self-contained HTML page

Every result has `.to_dict()` (the `--format json` document) and `.to_pandas()` (one DataFrame
per table; a dict of them when there are several).
"""
from __future__ import annotations

from hloscope.analyses.cost import CostOptions
from hloscope.analyses.cost.flops import FlopsResult
from hloscope.analyses.cost.remat import RematResult, remat
from hloscope.analyses.memory.analysis import MemoryResult
from hloscope.analyses.summary.inspect import InspectResult, inspect
from hloscope.api import compare, flops, from_jax, memory, oom, report
from hloscope.errors import HloscopeError, InputError, ParseError
from hloscope.model.module import Computation, HloModule
from hloscope.parsers.load import load_all
from hloscope.parsers.load import load_input as load
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
    "RematResult",
    "compare",
    "flops",
    "from_jax",
    "inspect",
    "load",
    "load_all",
    "memory",
    "oom",
    "remat",
    "report",
    "__version__",
]
