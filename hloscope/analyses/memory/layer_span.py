"""The live peak while the layer loops' saved activations are live, against the program's peak.

A scanned model's forward layer loop stacks the residuals its backward layer loop reads: a
stacked `[layers, ...]` buffer lives from the first top-level layer loop (the forward's) to the
last (the backward's). A remat policy that keeps more names grows those stacks, so what it adds
to the program's peak is what it adds inside that span. XLA may schedule the program's peak
outside it (libtpu runs the loss's forward after the backward layer loop when that lowers the
peak), and the stacks a policy keeps then fill the headroom between the two before they raise
the peak. What the entry makes between the loops and keeps until after the last is *deferred*
past the backward loop, live through all of it (libtpu's embedding gradient keeps the bf16
logits alive for it: `analyses/predict/model.py`). The llama-1b figures: see docs/frontier.md,
'Kept stacks under `full`'s peak outside its layer loops' and 'What libtpu recomputes first'.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Protocol

from hloscope.analyses.cost.layer_loops import LayerLoops
from hloscope.analyses.memory.liveness import Liveness
from hloscope.analyses.memory.liveness.peak import live_at
from hloscope.analyses.memory.liveness.values import Value
from hloscope.model.module import HloModule


class TimelineEntry(Protocol):
    """One top-level instruction of a memory timeline (`analysis.TimelineStep`)."""

    @property
    def step(self) -> int: ...

    @property
    def instruction(self) -> str: ...

    @property
    def live_bytes(self) -> int: ...

    @property
    def inner_peak_bytes(self) -> int | None: ...


@dataclass(frozen=True, slots=True)
class LayerSpan:
    """From the first top-level layer loop to the last, and the most device bytes live then."""

    first_loop: str
    last_loop: str
    peak_bytes: int
    program_peak_bytes: int
    outside_peak_bytes: int = 0  # the most live before the first loop or after the last
    deferred_bytes: int = 0  # made between the loops, live until after the last (`deferred`)
    last_loop_peak_bytes: int = 0  # the most live inside the last loop (the backward's)

    @property
    def headroom_bytes(self) -> int:
        """How far the program's peak, outside the span, is above the span's."""
        return self.program_peak_bytes - self.peak_bytes

    def to_dict(self) -> dict:
        return {**asdict(self), "headroom_bytes": self.headroom_bytes}


def layer_span(timeline: Sequence[TimelineEntry], peak_bytes: int,
               module: HloModule) -> LayerSpan | None:
    """The span of `module`'s entry-level layer loops in the entry's `timeline` (whose program
    peaks at `peak_bytes`); None without both a forward and a backward loop (unscanned layers,
    a forward-only program, or a micro-batch loop around both)."""
    loops = {name for computation, name in LayerLoops(module).loops
             if computation == module.entry_name}
    steps = [step for step in timeline if step.instruction in loops]
    if len(steps) < 2:
        return None
    first, last = steps[0], steps[-1]
    inside = [_most(step) for step in timeline if first.step <= step.step <= last.step]
    outside = [_most(step) for step in timeline if not first.step <= step.step <= last.step]
    return LayerSpan(first.instruction, last.instruction, max(inside), peak_bytes,
                     max(outside, default=0), last_loop_peak_bytes=_most(last))


def _most(step: TimelineEntry) -> int:
    return max(step.live_bytes, step.inner_peak_bytes or 0)


def deferred_bytes(liveness: Liveness, span: LayerSpan, keep: Callable[[Value], bool]) -> int:
    """Bytes of the values (those `keep` counts: the device's) that the entry makes after its
    first layer loop and before its last, and that are live after the last: held through the
    whole backward loop for something after it."""
    program = liveness.program
    times = {i.name: program.time[i] for i in program.root.instructions if i in program.time}
    first, last = times[span.first_loop], times[span.last_loop]
    return sum(value.bytes for value in live_at(liveness, last, keep=keep)
               if program.computation_of.get(value.instruction) is program.root
               and first < liveness.ranges[value.id][0] < last < liveness.ranges[value.id][1])
