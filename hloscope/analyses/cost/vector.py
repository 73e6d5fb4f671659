"""The cost of executing something: FLOPs, transcendentals, bytes accessed, collective bytes.

Costs are integers. `flops` and `transcendentals` follow XLA's HloCostAnalysis (a fused
multiply-add is two FLOPs; exp, log, tanh, ... count as transcendentals, not FLOPs);
`bytes_accessed` is XLA's estimate of memory traffic; `collective_bytes` is hloscope's own column:
the payload of collective operations (see hloscope.analyses.cost.rules).

A Cost is an immutable named tuple (millions are made in a large module, and tuples are cheap);
`+` adds costs property by property.
"""
from __future__ import annotations

from typing import NamedTuple

PROPERTIES = ("flops", "transcendentals", "bytes_accessed", "collective_bytes")


class Cost(NamedTuple):
    flops: int = 0
    transcendentals: int = 0
    bytes_accessed: int = 0
    collective_bytes: int = 0

    def __add__(self, other: tuple) -> Cost:  # type: ignore[override]
        return Cost(self[0] + other[0], self[1] + other[1], self[2] + other[2],
                    self[3] + other[3])

    def scaled(self, factor: int) -> Cost:
        if factor == 1:
            return self
        return Cost(self[0] * factor, self[1] * factor, self[2] * factor, self[3] * factor)

    def masked(self, mask: tuple[int, int, int, int]) -> Cost:
        """Each property multiplied by its factor in `mask` (trip counts, branch choices)."""
        if mask == (1, 1, 1, 1):
            return self
        return Cost(self[0] * mask[0], self[1] * mask[1], self[2] * mask[2], self[3] * mask[3])

    def compute_only(self) -> Cost:
        """What XLA copies from a reducer, mapper or scatter combiner: FLOPs, transcendentals."""
        return Cost(self[0], self[1])

    def with_bytes(self, bytes_accessed: int) -> Cost:
        return Cost(self[0], self[1], bytes_accessed, self[3])

    def as_tuple(self) -> tuple[int, int, int, int]:
        return (self[0], self[1], self[2], self[3])

    def to_dict(self) -> dict[str, int]:
        return dict(zip(PROPERTIES, self, strict=True))


ZERO = Cost()


def elementwise_max(costs: list[Cost]) -> Cost:
    """Each property's maximum over `costs` (XLA's rule for a conditional's branches)."""
    return Cost(*(max(column) for column in zip(*costs, strict=True)))


def total(costs: list[Cost]) -> Cost:
    flops = transcendentals = bytes_accessed = collective = 0
    for cost in costs:
        flops += cost[0]
        transcendentals += cost[1]
        bytes_accessed += cost[2]
        collective += cost[3]
    return Cost(flops, transcendentals, bytes_accessed, collective)
