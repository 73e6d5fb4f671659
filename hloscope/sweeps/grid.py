"""Grid sweeps: every remat variant at every (sequence length, global batch) point (no jax).

`--batch 8,16,32 --seq 2048,4096 --policies all` is the cartesian product of the variants, the
sequence lengths and the batches. Each combination is a `Case`; its name is the variant's alone
when the grid has one point (so single-value sweeps read as before) and otherwise says the
coordinates that vary, e.g. `full@batch=16,seq=4096`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from hloscope.configs.config_kind import ConfigKind, ConfigT
from hloscope.configs.policies import Variant
from hloscope.errors import UsageError


@dataclass(frozen=True)
class GridPoint:
    seq_len: int
    batch: int


@dataclass(frozen=True)
class Grid:
    seq_lens: tuple[int, ...]
    batches: tuple[int, ...]

    @classmethod
    def single(cls, config: ConfigKind) -> Grid:
        return cls((config.seq_len,), (config.batch,))

    @property
    def points(self) -> list[GridPoint]:
        return [GridPoint(seq, batch) for seq in self.seq_lens for batch in self.batches]

    def coordinates(self, point: GridPoint) -> str:
        parts = []
        if len(self.batches) > 1:
            parts.append(f"batch={point.batch}")
        if len(self.seq_lens) > 1:
            parts.append(f"seq={point.seq_len}")
        return ",".join(parts)


@dataclass(frozen=True)
class Case:
    """One variant at one grid point."""

    name: str
    variant: Variant
    point: GridPoint

    @property
    def file_name(self) -> str:
        return self.name.replace(":", "-").replace("+", "-").replace("@", "-").replace(
            ",", "-").replace("=", "")

    def config(self, base: ConfigT, batch: int) -> ConfigT:
        return dataclasses.replace(self.variant.apply(base), batch=batch,
                                   seq_len=self.point.seq_len)


def sweep_cases(variants: tuple[Variant, ...], grid: Grid) -> list[Case]:
    cases = []
    for variant in variants:
        for point in grid.points:
            coordinates = grid.coordinates(point)
            name = f"{variant.name}@{coordinates}" if coordinates else variant.name
            cases.append(Case(name, variant, point))
    return cases


def parse_int_list(text: str, option: str) -> tuple[int, ...]:
    """`"8,16,32"` -> (8, 16, 32); UsageError for anything but positive integers."""
    try:
        values = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise UsageError(f"{option} {text!r}: expected positive integers separated by "
                         "commas") from None
    if not values or min(values) < 1:
        raise UsageError(f"{option} {text!r}: every value must be at least 1")
    return tuple(dict.fromkeys(values))
