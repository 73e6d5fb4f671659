"""hloscope: read XLA HLO as compilers write it, and explain its FLOPs, memory and remat.

The public API grows with the analyses; importing hloscope never imports jax.

    module = hloscope.load("dump_dir/")          # a file, .gz, dump folder, "-" or HLO text
    summary = hloscope.inspect(module)           # op counts, parameters, outputs, FLOP totals
    costs = hloscope.flops(module)               # FLOPs by opcode, scope, layer and phase
    recomputed = hloscope.remat(module)          # what jax.checkpoint and XLA's pass recompute
"""
from __future__ import annotations

from hloscope.analyses.cost import CostOptions
from hloscope.analyses.flops import FlopsResult, flops
from hloscope.analyses.inspect import InspectResult, inspect
from hloscope.analyses.remat import RematResult, remat
from hloscope.errors import HloscopeError, InputError, ParseError
from hloscope.model.module import Computation, HloModule
from hloscope.parsers.load import load_all
from hloscope.parsers.load import load_input as load

__version__ = "0.1.0"

__all__ = [
    "Computation",
    "CostOptions",
    "FlopsResult",
    "RematResult",
    "HloModule",
    "HloscopeError",
    "InputError",
    "InspectResult",
    "ParseError",
    "flops",
    "inspect",
    "load",
    "load_all",
    "remat",
]
