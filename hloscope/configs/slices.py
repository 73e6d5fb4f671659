"""Which TPU slice shapes are real, per generation, and the Cloud TPU accelerator types (no jax).

libtpu compiles deviceless for any chip grid it is given, real or not (docs/targets.md: `v6e:32x16`
and `v6e:32x32` are accepted without complaint), so hloscope checks shapes itself against the
Cloud TPU documentation's tables:

- v5e (`v5litepod-N`) and v6e (`v6e-N`): 2D slices, N counts chips. Cloud TPU docs "TPU v5e"
  and "TPU v6e", "supported 2D slice shapes": 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16.
- v4 (`v4-N`) and v5p (`v5p-N`): 3D slices AxBxC, N counts TensorCores (two per chip: v5p-256
  is 128 chips, 4x4x8). Cloud TPU docs "TPU types and topologies": a topology AxBxC with
  A <= B <= C is either all dimensions <= 4 or all multiples of 4; the small ones the v4 and v5p
  pages list are 2x2x1, 2x2x2, 2x2x4 (v5p-32, v4-32) and 2x4x4. Largest: v4 a 4096-chip pod
  (Cloud TPU docs v4); v5p 16x16x24, 6144 chips (Cloud TPU docs v5p).
- v2 (`v2-N`), N counts TensorCores (two per chip): the types Cloud TPU docs "TPU v2" lists are
  v2-8, v2-32, v2-128, v2-256 and v2-512 (a 512-chip pod); v3: v3-8 ... v3-2048 (Cloud TPU docs
  "TPU types and zones"; a 1024-chip pod). Their chip grids are hloscope's reading (square, or
  twice as long as wide: v2-256 is 8x16), the ones libtpu accepts for those chip counts.
- TPU7x: no table verified here, so its shapes are not checked (`slice_shapes` says None).

A shape is matched in any order of its dimensions: the docs write v4-8 as 2x2x1 and the others
A <= B <= C, and a permutation of a real shape is the same slice turned.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

# accelerator types of these count TensorCores, two per chip; those of v5e and v6e count chips
CORE_COUNTED = ("v2", "v3", "v4", "v5p")
_TWO_D = {
    "v5e": ("1x1", "2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16"),
    "v6e": ("1x1", "2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16"),
    "v2": ("2x2", "4x4", "8x8", "8x16", "16x16"),
    "v3": ("2x2", "4x4", "4x8", "8x8", "8x16", "16x16", "16x32", "32x32"),
}
_SMALL_3D = ("2x2x1", "2x2x2", "2x2x4", "2x4x4")
_MAX_3D_CHIPS = {"v4": 4096, "v5p": 6144}
_MAX_3D_DIM = {"v4": 16, "v5p": 24}
ACCELERATOR_PREFIX = {"v5e": "v5litepod", "v6e": "v6e", "v2": "v2", "v3": "v3", "v4": "v4",
                      "v5p": "v5p"}
"""The device name as Cloud TPU accelerator types spell it (`v5litepod-16` is a v5e slice)."""
ACCELERATOR_ALIASES = {"v5e": "v5litepod"}
"""Prefixes users and other frameworks write for an accelerator type (`v5e-256`)."""


@dataclass(frozen=True)
class AcceleratorType:
    """A Cloud TPU accelerator type (`v6e-128`) and the slice it names."""

    name: str
    device: str  # hloscope.devices name: v6e, v5e, v5p, ...
    topology: str  # the chip grid: 8x16, 4x4x8

    @property
    def chips(self) -> int:
        return math.prod(int(d) for d in self.topology.split("x"))


def slice_shapes(device: str) -> tuple[str, ...] | None:
    """Every real slice shape of a generation, smallest first; None when hloscope has no table."""
    if device in _TWO_D:
        return _TWO_D[device]
    if device in _MAX_3D_CHIPS:
        return _SMALL_3D + _cube_shapes(_MAX_3D_DIM[device], _MAX_3D_CHIPS[device])
    return None


def _cube_shapes(max_dim: int, max_chips: int) -> tuple[str, ...]:
    """A <= B <= C, every dimension a multiple of 4, at most `max_chips` chips."""
    sides = range(4, max_dim + 1, 4)
    shapes = [(a, b, c) for a in sides for b in sides for c in sides
              if a <= b <= c and a * b * c <= max_chips]
    shapes.sort(key=lambda s: (math.prod(s), s))
    return tuple("x".join(map(str, s)) for s in shapes)


def is_real_slice(device: str, topology: str) -> bool | None:
    """Whether `topology` is a real slice of `device` (any order of its dimensions); None when
    the generation has no table."""
    shapes = slice_shapes(device)
    if shapes is None:
        return None
    wanted = sorted(int(d) for d in topology.split("x"))
    return any(sorted(int(d) for d in shape.split("x")) == wanted for shape in shapes)


def accelerator_types(device: str) -> tuple[AcceleratorType, ...]:
    """The accelerator types of a generation with a table: one per chip count, its grid the
    most compact real shape of that count (the one the docs list)."""
    shapes = slice_shapes(device)
    prefix = ACCELERATOR_PREFIX.get(device)
    if shapes is None or prefix is None:
        return ()
    per_chip = 2 if device in CORE_COUNTED else 1
    by_count: dict[int, str] = {}
    for shape in sorted(shapes, key=_compactness):
        by_count.setdefault(math.prod(int(d) for d in shape.split("x")), shape)
    return tuple(AcceleratorType(f"{prefix}-{chips * per_chip}", device, shape)
                 for chips, shape in sorted(by_count.items()))


def _compactness(shape: str) -> tuple[int, str]:
    return max(int(d) for d in shape.split("x")), shape


def find_accelerator_type(name: str) -> AcceleratorType | None:
    """The accelerator type `name` (`v6e-128`, `v5litepod-16`, `v5p-256`), or None when it is
    none of the tables' (an unknown prefix, or a size no slice has). `v5e-N` is read as
    `v5litepod-N`, the name users write for it."""
    prefix, dash, size = name.partition("-")
    if dash and prefix in ACCELERATOR_ALIASES:
        name = f"{ACCELERATOR_ALIASES[prefix]}-{size}"
    for device in ACCELERATOR_PREFIX:
        for accelerator in accelerator_types(device):
            if accelerator.name == name:
                return accelerator
    return None
