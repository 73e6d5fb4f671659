"""What a program computes: FLOPs, bytes and recomputation, following XLA's HloCostAnalysis.

    analysis.py       per-instruction costs with loops multiplied out (`CostAnalysis`)
    rules.py          the cost of each opcode; convolution.py, custom_calls.py, fusion.py,
                      sizes.py, vector.py: the parts those rules share
    kernels.py        Pallas TPU kernels (splash attention) costed by their closed form
    graph.py, loops.py  computations reached from the entry, while-loop trip counts
    phases.py         forward / backward / recompute / optimizer from the name stack
    attribution.py    costs charged to scopes, layers and phases
    flops.py          `flops()`: the breakdowns of `hloscope flops`
    remat.py          `remat()`: what jax.checkpoint and XLA's remat pass recompute
"""
from hloscope.analyses.cost.analysis import (
    ClosedForm,
    CostAnalysis,
    CostOptions,
    Unattributed,
    UnknownLoop,
)
from hloscope.analyses.cost.vector import Cost

__all__ = ["ClosedForm", "Cost", "CostAnalysis", "CostOptions", "Unattributed", "UnknownLoop"]
