"""Which global batches a variant is compiled at: one fixed batch, or a search for the largest
that fits (no jax).

`BatchSearch` looks at multiples of `step` (the batch's legal granularity: it must split evenly
over the mesh axes that shard it; `SweepRequest.batch_step`) in [step, max_batch], one compile
(a probe) at a time. libtpu's fit is not monotonic in batch, so the search grows, shrinks and
bisects, then compiles the `window` steps just above the boundary, restarting from any fit found
there. It ends when `max_batch` fits, no rule asks for a batch, a compile gives no verdict, or
after `max_probes`. Guarantee (unless the budget or a missing verdict stopped it, which `end`
says): the answer fits, and every multiple of `step` in (b, b + window*step] was compiled and
does not fit. The rules, the guarantee and why a window: see docs/sweeps.md, 'The search rules'.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

DEFAULT_WINDOW = 2  # the first failure above the answer and one step above it
# A monotonic search needs 1 + log2(b / start) to grow, 1 failure, log2(b / step) to bisect
# and window - 1: at most 19 with the start within 4x of an answer b of up to 2^14 steps.
DEFAULT_MAX_PROBES = 20

# Why a search ended (`BatchSearch.end`).
END_BOUNDARY = "boundary"  # the window above the answer was compiled and fails
END_MAX_BATCH = "max_batch"  # max_batch itself fits
END_NOTHING_FITS = "nothing_fits"  # nothing fits, down to `step` and its window
END_BUDGET = "budget"  # max_probes compiles were made
END_NO_VERDICT = "no_verdict"  # a compile ended in an error or a crash


@dataclass
class Probe:
    batch: int
    fits: bool | None
    status: str


@dataclass
class FixedBatch:
    """Compile once, at `batch`."""

    batch: int
    probes: list[Probe] = field(default_factory=list)

    def next_batch(self) -> int | None:
        return None if self.probes else self.batch

    def record(self, batch: int, fits: bool | None, status: str) -> None:
        self.probes.append(Probe(batch, fits, status))

    @property
    def chosen_batch(self) -> int | None:
        return self.batch


@dataclass
class BatchSearch:
    """The largest multiple of `step` in [step, max_batch] that fits, by the rules of the
    module docstring. `next_batch` is a function of the probes so far (asking twice gives the
    same answer); `record` adds one."""

    start: int
    step: int
    max_batch: int
    window: int = DEFAULT_WINDOW
    max_probes: int = DEFAULT_MAX_PROBES
    probes: list[Probe] = field(default_factory=list)

    def __post_init__(self) -> None:
        if min(self.step, self.window, self.max_probes) < 1 or self.max_batch < self.step:
            raise ValueError(f"no batch search with step {self.step}, max_batch "
                             f"{self.max_batch}, window {self.window}, {self.max_probes} probes")
        self.max_batch = self._round(self.max_batch)
        self.start = min(max(self._round(self.start), self.step), self.max_batch)

    def _round(self, batch: int) -> int:
        return batch // self.step * self.step

    def next_batch(self) -> int | None:
        return self._decide()[0]

    @property
    def end(self) -> str | None:
        """Why the search ended (an END_* value); None while it goes on."""
        return self._decide()[1]

    def record(self, batch: int, fits: bool | None, status: str) -> None:
        self.probes.append(Probe(batch, fits, status))

    @property
    def largest(self) -> int | None:
        """The largest batch known to fit."""
        return max((p.batch for p in self.probes if p.fits), default=None)

    @property
    def smallest_failing(self) -> int | None:
        """The smallest batch above `largest` known not to fit (the smallest failing batch
        when nothing fits)."""
        return min(self._failures_above(self.largest), default=None)

    @property
    def non_monotonic(self) -> list[tuple[int, int]]:
        """(fails_at, fits_at) for every fit whose next smaller compiled batch does not fit."""
        ordered = sorted((p.batch, p.fits) for p in self.probes if p.fits is not None)
        return [(below, batch) for (below, below_fits), (batch, fits)
                in itertools.pairwise(ordered) if fits and not below_fits]

    @property
    def chosen_batch(self) -> int | None:
        """The batch whose build represents the variant: the largest that fits; else the one
        without a verdict (its error is the news); else the smallest tried."""
        if self.largest is not None:
            return self.largest
        broken = [p.batch for p in self.probes if p.fits is None]
        if broken:
            return broken[-1]
        return min((p.batch for p in self.probes), default=None)

    def _failures_above(self, batch: int | None) -> list[int]:
        return [p.batch for p in self.probes
                if p.fits is False and (batch is None or p.batch > batch)]

    def _decide(self) -> tuple[int | None, str | None]:
        """(the next batch to compile, None) or (None, why the search ended)."""
        if not self.probes:
            return self.start, None
        if any(p.fits is None for p in self.probes):
            return None, END_NO_VERDICT
        best = self.largest
        if best == self.max_batch:
            return None, END_MAX_BATCH
        wanted = self._wanted(best)
        if wanted is None:
            return None, END_BOUNDARY if best is not None else END_NOTHING_FITS
        if len(self.probes) >= self.max_probes:
            return None, END_BUDGET
        return wanted, None

    def _wanted(self, best: int | None) -> int | None:
        failures = self._failures_above(best)
        if best is not None and not failures:  # 1. grow
            return min(best * 2, self.max_batch)
        first_failure = min(failures)
        if best is None and first_failure > self.step:  # 2. shrink
            return max(self._round(first_failure // 2), self.step)
        low = best or 0
        middle = low + (first_failure - low) // self.step // 2 * self.step
        if best is not None and middle > best:  # 3. bisect
            return middle
        tried = {p.batch for p in self.probes}  # 4. window
        top = min(low + self.window * self.step, self.max_batch)
        return next((batch for batch in range(low + self.step, top + 1, self.step)
                     if batch not in tried), None)
