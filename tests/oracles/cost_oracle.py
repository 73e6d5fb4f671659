"""XLA's own HloCostAnalysis (a private jaxlib API) as a test oracle; never a runtime dependency.

`hlo_module_cost_analysis(cpu_client, module)` runs XLA's HloCostAnalysis with the CPU backend's
shape sizes on any HLO text: loop bodies counted once, custom-calls as -1 FLOP and -1 byte.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from xla_oracle import split_modules

# Opcodes and attributes newer than the pinned XLA, replaced as xla_oracle does for its parser.
_REPLACEMENTS = ((" collective-reduce(", " all-reduce("), (", has_dynamic_root=true", ""))


@dataclass(frozen=True)
class XlaCost:
    flops: float
    transcendentals: float
    bytes_accessed: float


@cache
def _client():
    import jax

    return jax.devices("cpu")[0].client


def xla_cost(module_text: str) -> XlaCost:
    from jax._src.lib import xla_client
    from jaxlib import _hlo

    for newer, older in _REPLACEMENTS:
        module_text = module_text.replace(newer, older)
    module = _hlo.hlo_module_from_text(module_text)
    result = xla_client._xla.hlo_module_cost_analysis(_client(), module)
    return XlaCost(result.get("flops", 0.0), result.get("transcendentals", 0.0),
                   result.get("bytes accessed", 0.0))


def module_texts(text: str) -> list[str]:
    return split_modules(text)


def close(ours: int, theirs: float, tolerance: float = 0.01) -> bool:
    """Within `tolerance` relatively (XLA sums in float32), or within 1 of a tiny total."""
    return abs(ours - theirs) <= max(tolerance * abs(theirs), 1.0)
