"""The frontier search's bound: nothing keeps less than `full`, so where `full` does not fit, that
batch and the larger ones cost no compile. A hand-built world (no compiler): each program's
bytes are a linear function of the batch and the kept names, written out here; the baselines
are the recorded tiny / v5e:2x2 ones with their batch and allocation replaced by the world's."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from hloscope.analyses.predict.baseline import Baseline
from hloscope.configs.presets import preset_config
from hloscope.configs.tensors import decode_named
from hloscope.sweeps.frontier import MAX_ROUNDS, FrontierSearch, frontier_names, policy_space

FIXTURE = Path(__file__).parents[2] / "fixtures" / "predict" / "tiny-v5e-2x2.json"
TEMPLATE = Baseline.from_dict(json.loads(FIXTURE.read_text())["baselines"][0])
NAMES = ("qkv", "mlp_hidden")
BLOCK = frontier_names(preset_config("tiny"))
MIB = 1 << 20
FIXED, PER_SEQUENCE, PER_KEPT_NAME = 40 * MIB, 2 * MIB, 8 * MIB  # bytes / sequence / name


def world_bytes(policy: str, batch: int) -> int:
    kept = sum(choice != "remat" for choice in decode_named(policy, BLOCK).values()) \
        if policy.startswith("names:") else 0
    return FIXED + PER_SEQUENCE * batch + PER_KEPT_NAME * kept * batch // 64


class World:
    def __init__(self) -> None:
        self.compiled: list[tuple[str, int]] = []

    def compile_batch(self, policies: list[str], batch: int):
        self.compiled += [(p, batch) for p in policies]
        return {p: (world_bytes(p, batch), f"{p}@{batch}") for p in policies}, len(policies)

    def baseline_of(self, folder: Path) -> Baseline:
        batch = int(str(folder).rsplit("@", 1)[1])
        return dataclasses.replace(TEMPLATE, config={**TEMPLATE.config, "batch": batch},
                                   allocation_bytes=world_bytes("full", batch),
                                   fixed_bytes=FIXED)


def run(batches: tuple[int, ...], capacity: int) -> tuple[World, object]:
    world = World()
    search = FrontierSearch(world.compile_batch, world.baseline_of,
                            policy_space(NAMES, BLOCK), batches, capacity, NAMES)
    return world, search.run()


def test_no_compile_above_the_batch_full_does_not_fit():
    capacity = world_bytes("full", 128) + MIB  # full fits at 128, not at 192
    world, result = run((64, 128, 192, 256, 320), capacity)
    assert {batch for _, batch in world.compiled} <= {64, 128, 192}
    assert ("full", 320) not in world.compiled and ("full", 256) not in world.compiled
    assert result.winners[192] is result.winners[256] is result.winners[320] is None
    for batch in (64, 128):
        winner = result.winners[batch]
        assert winner is not None and world_bytes(winner, batch) <= capacity


def test_second_baseline_is_the_largest_batch_full_is_predicted_to_fit():
    capacity = world_bytes("full", 192) + MIB
    world, _ = run((64, 128, 192, 256, 320), capacity)
    baselines = [batch for policy, batch in world.compiled if policy == "full"]
    assert baselines[:2] == [64, 192]


def test_full_over_the_capacity_at_the_smallest_batch_ends_the_search():
    """That batch compiles at most MAX_ROUNDS candidates nearest above the capacity (keeping a
    name can lower XLA's allocation); none fits in this world, and the larger batch costs
    nothing."""
    world, result = run((64, 128), world_bytes("full", 64) - 1)
    assert world.compiled[0] == ("full", 64)
    assert all(batch == 64 for _, batch in world.compiled)
    assert len(world.compiled) <= 1 + MAX_ROUNDS
    assert result.winners == {64: None, 128: None}
