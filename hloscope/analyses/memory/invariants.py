"""Relations every memory analysis must satisfy, whatever the program.

- The live peak is never above XLA's allocation when XLA's figures are at hand: the allocation
  holds every value at its offset, so the most bytes live at once fit in it.
- The estimated allocation is never below the live peak: it packs the same values.

Both allocations leave constants out (as memory_analysis() does) and the live peak counts those
live at its moment, so both sides of these two compare with the constants' bytes added.
- Each difference's reason explains a gap of its sign (`story.reason_sign`): gaps and alignment
  make an allocation larger, never smaller.

A violation is a hloscope bug: the tests assert there is none on every fixture, corpus dump and
generated program (tests/analyses/memory/test_memory_truth.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from hloscope.analyses.memory.liveness.spaces import is_device_space
from hloscope.analyses.memory.story import reason_sign

if TYPE_CHECKING:
    from hloscope.analyses.memory.analysis import MemoryResult


def violations(result: MemoryResult) -> list[str]:
    """One line per broken relation (empty: all hold)."""
    found = []
    peak, estimate = result.peak_bytes, result.estimated_allocation_bytes
    allocation = result.xla.allocation_bytes if result.xla is not None else None
    constants = _device_constant_bytes(result)
    if allocation is not None and peak > allocation + constants:
        found.append(f"live peak {peak:,} B is above XLA's allocation {allocation:,} B "
                     f"(+ {constants:,} B of constants)")
    if estimate is not None and estimate + constants < peak:
        found.append(f"estimated allocation {estimate:,} B (+ {constants:,} B of constants) is "
                     f"below the live peak {peak:,} B")
    for difference in result.story.differences:
        sign = reason_sign(difference.reason)
        if sign and difference.bytes and (difference.bytes > 0) != (sign > 0):
            found.append(f"{difference.label}: {difference.bytes:+,} B explained by a reason for "
                         f"the other sign ({difference.reason!r})")
    return found


def _device_constant_bytes(result: MemoryResult) -> int:
    estimate = result.allocation_estimate
    if estimate is None:
        return 0
    return sum(s.constant_bytes for s in estimate.spaces
               if is_device_space(result.backend, s.memory_space))
