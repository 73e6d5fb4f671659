"""Every analysis of one module at once: what `hloscope report` shows for each input.

FLOPs and remat share one cost walk; memory needs a scheduled module (for an unscheduled one it
is None and `memory_note` says why); XLA's own memory figures are read when the module came
from a dump folder.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hloscope.analyses.cost.flops import FlopsResult, cost_analysis, costed_charges, flops
from hloscope.analyses.cost.remat import RematResult, remat
from hloscope.analyses.memory.analysis import MemoryResult, memory, xla_figures
from hloscope.analyses.summary.inspect import InspectResult, inspect
from hloscope.model.module import HloModule

NOT_SCHEDULED = "n/a: module not scheduled (pass the after-optimizations dump)"


@dataclass(slots=True)
class ModuleOverview:
    """One input: its label (a file, folder or sweep variant name) and every analysis."""

    label: str
    inspect: InspectResult
    flops: FlopsResult
    remat: RematResult
    memory: MemoryResult | None
    memory_note: str = ""

    @property
    def peak_bytes(self) -> int | None:
        return None if self.memory is None else self.memory.peak_bytes

    @property
    def allocation_bytes(self) -> int | None:
        xla = None if self.memory is None else self.memory.xla
        return None if xla is None else xla.allocation_bytes


def overview(module: HloModule, label: str) -> ModuleOverview:
    analysis = cost_analysis(module)
    charged = costed_charges(analysis)
    memory_result, note = _memory(module)
    return ModuleOverview(label=label, inspect=inspect(module, costs=False),
                          flops=flops(analysis, charged=charged),
                          remat=remat(analysis, charged=charged), memory=memory_result,
                          memory_note=note)


def _memory(module: HloModule) -> tuple[MemoryResult | None, str]:
    if not module.is_scheduled:
        return None, NOT_SCHEDULED
    from hloscope.analyses.memory.liveness.spaces import detect_backend

    backend = detect_backend(module)
    xla = xla_figures(module.source, None, backend) if _is_file(module.source) else None
    return memory(module, backend=backend, xla=xla), ""


def _is_file(source: str) -> bool:
    return bool(source) and not source.startswith("<") and Path(source).is_file()


@dataclass(frozen=True, slots=True)
class Verdict:
    """Which input is the fastest that fits: fewest FLOPs per device among those whose memory
    (XLA's allocation when known, else the live peak) is within the capacity."""

    winner: str | None
    reason: str
    fits: dict[str, bool | None]


def memory_needed(item: ModuleOverview) -> int | None:
    allocation = item.allocation_bytes
    return allocation if allocation is not None else item.peak_bytes


def fastest_that_fits(overviews: list[ModuleOverview], capacity: int | None) -> Verdict:
    fits = {item.label: _fits(item, capacity) for item in overviews}
    candidates = [item for item in overviews if fits[item.label] is not False]
    if not candidates:
        return Verdict(None, "no input fits", fits)
    winner = min(candidates, key=lambda item: item.flops.total.flops)
    if capacity is None:
        reason = "fewest FLOPs per device; fit unknown (no capacity: pass --device or --capacity)"
    else:
        reason = "fewest FLOPs per device among the inputs that fit"
    return Verdict(winner.label, reason, fits)


def _fits(item: ModuleOverview, capacity: int | None) -> bool | None:
    needed = memory_needed(item)
    if capacity is None or needed is None:
        return None
    return needed <= capacity
