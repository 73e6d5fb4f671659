"""Every analysis of one module at once: what `hloscope report` shows for each input.

FLOPs and remat share one cost walk; memory needs a scheduled module (for an unscheduled one it
is None and `memory_note` says why); XLA's own memory figures come with it when the program's
dump folder has them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from hloscope.analyses.cost.flops import FlopsResult, cost_analysis, costed_charges, flops
from hloscope.analyses.cost.remat import RematResult, remat
from hloscope.analyses.memory.analysis import MemoryResult, program_memory
from hloscope.analyses.summary.inspect import InspectResult, inspect
from hloscope.formats.sweep import SweepRecord
from hloscope.loader.program import Program

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


def overview(program: Program, label: str) -> ModuleOverview:
    module = program.module
    analysis = cost_analysis(module)
    charged = costed_charges(analysis)
    memory_result, note = _memory(program)
    return ModuleOverview(label=label, inspect=inspect(module, costs=False),
                          flops=flops(analysis, charged=charged),
                          remat=remat(analysis, charged=charged), memory=memory_result,
                          memory_note=note)


def _memory(program: Program) -> tuple[MemoryResult | None, str]:
    if not program.module.is_scheduled:
        return None, NOT_SCHEDULED
    return program_memory(program), ""


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


@dataclass(slots=True)
class OverviewSet:
    """What `hloscope report` shows: every input's overview, and for several inputs (or a sweep)
    the verdict on which is the fastest that fits."""

    overviews: list[ModuleOverview]
    verdict: Verdict | None
    capacity: int | None
    sweep: SweepRecord | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def compared(self) -> bool:
        return self.verdict is not None


def overview_set(programs: list[tuple[str, Program]], capacity: int | None = None,
                 sweep: SweepRecord | None = None,
                 notes: list[str] | None = None) -> OverviewSet:
    """Overviews of labelled programs (labels made distinct); a sweep's own verdict and
    capacity when the programs are its variants."""
    overviews = [overview(program, label) for label, program in _unique(programs)]
    verdict = None
    if sweep is not None:
        capacity = capacity or sweep.capacity_bytes
        verdict = sweep_verdict(sweep)
    elif len(overviews) > 1:
        verdict = fastest_that_fits(overviews, capacity)
    return OverviewSet(overviews, verdict, capacity, sweep, list(notes or []))


def sweep_verdict(sweep: SweepRecord) -> Verdict:
    """The sweep's own verdict (libtpu's fit, the roofline step time), not a FLOPs proxy."""
    fits = {row.variant: row.fits for row in sweep.variants}
    reason = "the sweep's verdict: the fastest (estimated step time) of the variants that fit"
    return Verdict(sweep.winner, reason, fits)


def _unique(programs: list[tuple[str, Program]]) -> list[tuple[str, Program]]:
    """Labels made distinct (`name`, `name (2)`, ...)."""
    seen: dict[str, int] = {}
    unique = []
    for label, program in programs:
        seen[label] = seen.get(label, 0) + 1
        unique.append((label if seen[label] == 1 else f"{label} ({seen[label]})", program))
    return unique
