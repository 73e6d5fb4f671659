"""Per-instruction costs following XLA's HloCostAnalysis, with loops multiplied out."""
from hloscope.analyses.cost.analysis import (
    CostAnalysis,
    CostOptions,
    Unattributed,
    UnknownLoop,
)
from hloscope.analyses.cost.vector import Cost

__all__ = ["Cost", "CostAnalysis", "CostOptions", "Unattributed", "UnknownLoop"]
