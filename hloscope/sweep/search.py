"""Which global batches a variant is compiled at: one fixed batch, or a search for the largest
that fits (no jax).

`BatchSearch` walks multiples of `step` (the data-parallel size: a batch must split evenly over
the data axis): from the starting batch it doubles while compiles fit and halves while they do
not, until it has a fitting batch and a failing one, then bisects between them. It ends when
the two are one step apart (`largest` fits, `largest + step` does not), when even one step does
not fit (`largest` is None), when `max_batch` fits, or when a compile gives no verdict (an
error or crash: `failed`). Every compile it asked for is in `probes`.
"""
from __future__ import annotations

from dataclasses import dataclass, field


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
    """The largest multiple of `step` in [step, max_batch] that fits, by doubling and bisection."""

    start: int
    step: int
    max_batch: int
    largest: int | None = None  # the largest batch known to fit
    smallest_failing: int | None = None  # the smallest batch known not to fit
    failed: bool = False
    probes: list[Probe] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.start = min(max(self._round(self.start), self.step), self.max_batch)

    def _round(self, batch: int) -> int:
        return batch // self.step * self.step

    def next_batch(self) -> int | None:
        if self.failed:
            return None
        if not self.probes:
            return self.start
        low, high = self.largest, self.smallest_failing
        if high is None:  # everything so far fits: grow
            assert low is not None
            grown = min(low * 2, self._round(self.max_batch))
            return grown if grown > low else None
        if low is None:  # nothing fits yet: shrink
            shrunk = max(self._round(high // 2), self.step)
            return shrunk if shrunk < high else None
        middle = low + (high - low) // self.step // 2 * self.step
        return middle if middle > low else None

    def record(self, batch: int, fits: bool | None, status: str) -> None:
        self.probes.append(Probe(batch, fits, status))
        if fits is None:
            self.failed = True
        elif fits:
            self.largest = max(batch, self.largest or batch)
        else:
            self.smallest_failing = min(batch, self.smallest_failing or batch)

    @property
    def chosen_batch(self) -> int | None:
        """The batch whose build represents the variant: the largest that fits, else the last
        batch tried."""
        if self.largest is not None:
            return self.largest
        return self.probes[-1].batch if self.probes else None
