"""The truth a frontier search is held to where every candidate was compiled: per batch, the
fastest candidate (by `rank`, the search's own ordering) among those whose compiled allocation
fits the capacity."""
from __future__ import annotations

from collections.abc import Callable


def assert_winners_are_the_exhaustive_ones(result, exhaustive: dict, batches: tuple[int, ...],
                                           rank: Callable[[str, int], tuple],
                                           compared: int | None = None) -> None:
    """`result.winners` against `exhaustive` ({"space", "compiled", "capacity"}); the first
    `compared` fields of `rank` must agree (all by default)."""
    space, compiled, capacity = (exhaustive[k] for k in ("space", "compiled", "capacity"))
    for batch in batches:
        fitting = [p for p in space if compiled[batch, p] <= capacity]
        truth = min(fitting, key=lambda p: rank(p, batch)) if fitting else None
        found = result.winners[batch]
        assert (found is None) == (truth is None), batch
        if truth is not None:
            assert rank(found, batch)[:compared] == rank(truth, batch)[:compared], \
                (batch, found, truth)
            assert compiled[batch, found] <= capacity
    assert result.candidates == len(space) * len(batches)
