"""Which backend compiled a module: from the dump file's name, else TPU's tiled layouts.

XLA names a dump file `*.cpu_after_optimizations.txt` or `*.sm_9.0a_gpu_after_optimizations.txt`;
a TPU module is recognised by its tiled layouts (`{1,0:T(8,128)}`). HLO text alone from a CPU or
GPU is "unknown": hloscope never guesses from the machine it runs on.
"""
from __future__ import annotations

import re

from hloscope.model.module import HloModule

UNKNOWN_BACKEND = "unknown"
_TILED_LAYOUT = re.compile(r"\{[\d,]*:T\(")
_LAYOUTS_LOOKED_AT = 200


def detect_backend(module: HloModule) -> str:
    """"cpu", "gpu", "tpu" or "unknown"."""
    name = module.source.rsplit("/", 1)[-1]
    if "cpu_after_optimizations" in name or "cpu_before_optimizations" in name:
        return "cpu"
    if "gpu_after_optimizations" in name or "gpu_before_optimizations" in name:
        return "gpu"
    for instruction in module.entry.instructions[:_LAYOUTS_LOOKED_AT]:
        if _TILED_LAYOUT.search(instruction.shape_text):
            return "tpu"
    return UNKNOWN_BACKEND
