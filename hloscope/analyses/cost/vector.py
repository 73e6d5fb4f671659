"""The cost of executing something: FLOPs, transcendentals, bytes accessed, collective bytes.

Costs are integers. `flops` and `transcendentals` follow XLA's HloCostAnalysis (a fused
multiply-add is two FLOPs; exp, log, tanh, ... count as transcendentals, not FLOPs);
`bytes_accessed` is XLA's estimate of memory traffic; `collective_bytes` is hloscope's own column:
the payload of collective operations (see hloscope.analyses.cost.rules).
"""
from __future__ import annotations

from dataclasses import dataclass

PROPERTIES = ("flops", "transcendentals", "bytes_accessed", "collective_bytes")


@dataclass(frozen=True, slots=True)
class Cost:
    flops: int = 0
    transcendentals: int = 0
    bytes_accessed: int = 0
    collective_bytes: int = 0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.flops + other.flops,
                    self.transcendentals + other.transcendentals,
                    self.bytes_accessed + other.bytes_accessed,
                    self.collective_bytes + other.collective_bytes)

    def scaled(self, factor: int) -> Cost:
        if factor == 1:
            return self
        return Cost(self.flops * factor, self.transcendentals * factor,
                    self.bytes_accessed * factor, self.collective_bytes * factor)

    def masked(self, mask: tuple[int, int, int, int]) -> Cost:
        """Each property multiplied by its factor in `mask` (trip counts, branch choices)."""
        return Cost(self.flops * mask[0], self.transcendentals * mask[1],
                    self.bytes_accessed * mask[2], self.collective_bytes * mask[3])

    def compute_only(self) -> Cost:
        """What XLA copies from a reducer, mapper or scatter combiner: FLOPs, transcendentals."""
        return Cost(self.flops, self.transcendentals)

    def with_bytes(self, bytes_accessed: int) -> Cost:
        return Cost(self.flops, self.transcendentals, bytes_accessed, self.collective_bytes)

    def as_tuple(self) -> tuple[int, int, int, int]:
        return (self.flops, self.transcendentals, self.bytes_accessed, self.collective_bytes)

    def to_dict(self) -> dict[str, int]:
        return dict(zip(PROPERTIES, self.as_tuple(), strict=True))


ZERO = Cost()


def elementwise_max(costs: list[Cost]) -> Cost:
    """Each property's maximum over `costs` (XLA's rule for a conditional's branches)."""
    columns = zip(*(c.as_tuple() for c in costs), strict=True)
    return Cost(*(max(column) for column in columns))


def total(costs: list[Cost]) -> Cost:
    flops = transcendentals = bytes_accessed = collective = 0
    for cost in costs:
        flops += cost.flops
        transcendentals += cost.transcendentals
        bytes_accessed += cost.bytes_accessed
        collective += cost.collective_bytes
    return Cost(flops, transcendentals, bytes_accessed, collective)
