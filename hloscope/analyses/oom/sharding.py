"""Sharding in an OOM diagnosis: state replicated where it could be sharded, gathered weights.

Figures are per device. An SPMD-partitioned module (`num_partitions` > 1) marks each entry
parameter with its sharding; a weight or optimizer-state argument marked `{replicated}` is held
whole on every device, so sharding it over N devices (FSDP / ZeRO-3) would keep 1/N of it. A
buffer live at the peak that an all-gather made is a gathered copy (FSDP gathers each layer's
weights before using them); many of them live at once means gathers are not released early.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from hloscope.analyses.memory.analysis import BufferRow
from hloscope.analyses.memory.liveness.categories import argument_category, argument_path
from hloscope.analyses.oom.categories import oom_category
from hloscope.model.module import HloModule

STATE_CATEGORIES = ("parameter", "optimizer state")


@dataclass(frozen=True, slots=True)
class ShardingFindings:
    partitions: int
    replicated_state_bytes: int  # per device: weights + optimizer state held whole
    replicated_state_arguments: int
    sharded_state_bytes: int
    gathered_live_bytes: int  # all-gather outputs live at the peak
    gathered_live_buffers: int

    def savings_if_sharded(self, ways: int) -> int:
        """Bytes per device sharding the replicated state `ways` ways would free."""
        return self.replicated_state_bytes - self.replicated_state_bytes // max(ways, 1)

    def to_dict(self) -> dict:
        return {**asdict(self),
                "savings_if_sharded": self.savings_if_sharded(self.partitions)}


def sharding_findings(module: HloModule, live: list[BufferRow], backend: str) -> ShardingFindings:
    replicated = sharded = count = 0
    for parameter in module.entry.parameters:
        category = argument_category(argument_path(parameter)).value
        if category not in STATE_CATEGORIES or not parameter.shape.is_array:
            continue
        size = parameter.shape.byte_size
        if (parameter.sharding or "").strip("{} ") == "replicated":
            replicated, count = replicated + size, count + 1
        else:
            sharded += size
    gathered = [r for r in live if oom_category(r, backend) == "collective buffers"
                and r.instruction.startswith("all-gather")]
    return ShardingFindings(module.num_partitions, replicated, count, sharded,
                            sum(r.bytes for r in gathered), len(gathered))
