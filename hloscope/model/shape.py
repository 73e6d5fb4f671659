"""Shapes and layouts as XLA prints them, and their sizes in bytes.

An array shape is an element type, dimensions (some dynamic: `<=N` is bounded by N, `?` has no
bound and is stored as -1) and an optional layout. A layout keeps XLA's minor-to-major order,
tiling (`T(8,128)(2,1)`), packed element size (`E(4)`), memory space (`S(1)`) and tail padding
(`L(n)`); items this model has no use for are kept verbatim in `Layout.extra`.

Two sizes exist for an array: `byte_size` is what XLA's ShapeUtil::ByteSizeOf gives with no tiling
(sub-byte types take a byte per element unless the layout packs them with `E(n)`), and
`padded_byte_size` also rounds the tiled dimensions up to whole tiles, as a TPU allocates them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

# Storage bits per element (XLA primitive_util: BitWidth). `pred` is stored in a byte.
ELEMENT_BITS: dict[str, int] = {
    "pred": 8,
    "s1": 1, "s2": 2, "s4": 4, "s8": 8, "s16": 16, "s32": 32, "s64": 64,
    "u1": 1, "u2": 2, "u4": 4, "u8": 8, "u16": 16, "u32": 32, "u64": 64,
    "f4e2m1fn": 4,
    "f8e3m4": 8, "f8e4m3": 8, "f8e4m3fn": 8, "f8e4m3fnuz": 8, "f8e4m3b11fnuz": 8,
    "f8e5m2": 8, "f8e5m2fnuz": 8, "f8e8m0fnu": 8,
    "bf16": 16, "f16": 16, "f32": 32, "f64": 64,
    "c64": 64, "c128": 128,
    "token": 0, "opaque": 0,
}

TUPLE = "tuple"
UNBOUNDED = -1


def element_byte_width(element_type: str) -> int:
    """Bytes one unpacked element takes: sub-byte types round up to a whole byte."""
    bits = ELEMENT_BITS[element_type]
    return 0 if bits == 0 else max(1, bits // 8)


@dataclass(frozen=True, slots=True)
class Layout:
    """A physical layout: `{minor_to_major:T(tile)(tile)E(bits)S(space)...}`."""

    minor_to_major: tuple[int, ...]
    tiles: tuple[tuple[int, ...], ...] = ()
    element_size_in_bits: int = 0
    memory_space: int = 0
    tail_padding_alignment: int = 1
    extra: tuple[str, ...] = ()

    def __str__(self) -> str:
        items = "T" + "".join("(" + ",".join(map(_tile_dim, t)) + ")" for t in self.tiles) \
            if self.tiles else ""
        if self.tail_padding_alignment != 1:
            items += f"L({self.tail_padding_alignment})"
        if self.element_size_in_bits:
            items += f"E({self.element_size_in_bits})"
        if self.memory_space:
            items += f"S({self.memory_space})"
        items += "".join(self.extra)
        order = ",".join(map(str, self.minor_to_major))
        return "{" + order + (":" + items if items else "") + "}"


def _tile_dim(size: int) -> str:
    return "*" if size == COMBINED_TILE_DIM else str(size)


COMBINED_TILE_DIM = -2  # `*` in a tile: the dimension is combined with the next one


@dataclass(frozen=True, slots=True)
class Shape:
    """An array, token or tuple shape; `tuple_shapes` is set only for tuples."""

    element_type: str
    dimensions: tuple[int, ...] = ()
    dynamic_dimensions: tuple[bool, ...] = ()
    layout: Layout | None = None
    tuple_shapes: tuple[Shape, ...] = field(default=())

    @property
    def is_tuple(self) -> bool:
        return self.element_type == TUPLE

    @property
    def is_array(self) -> bool:
        return self.element_type not in (TUPLE, "token", "opaque")

    @property
    def rank(self) -> int:
        return len(self.dimensions)

    @property
    def memory_space(self) -> int:
        return self.layout.memory_space if self.layout else 0

    @property
    def element_count(self) -> int:
        """Elements of an array (a dynamic dimension counts at its bound)."""
        return math.prod(max(d, 0) for d in self.dimensions)

    @property
    def byte_size(self) -> int:
        """Bytes of an array, or of all leaf arrays of a tuple, without tile padding."""
        if self.is_tuple:
            return sum(s.byte_size for s in self.tuple_shapes)
        return _packed_bytes(self.element_count, self.element_type, self.layout)

    @property
    def padded_byte_size(self) -> int:
        """Like byte_size, with tiled dimensions rounded up to whole tiles."""
        if self.is_tuple:
            return sum(s.padded_byte_size for s in self.tuple_shapes)
        if not self.layout or not self.layout.tiles:
            return self.byte_size
        count = math.prod(_tiled_physical_dims(self.dimensions, self.layout))
        return _packed_bytes(count, self.element_type, self.layout)

    def leaves(self) -> list[tuple[tuple[int, ...], Shape]]:
        """(shape index, array shape) for every leaf, in order; an array is its own leaf."""
        if not self.is_tuple:
            return [((), self)]
        found: list[tuple[tuple[int, ...], Shape]] = []
        for i, sub in enumerate(self.tuple_shapes):
            found.extend(((i, *index), leaf) for index, leaf in sub.leaves())
        return found

    def subshape(self, index: tuple[int, ...]) -> Shape:
        shape = self
        for i in index:
            shape = shape.tuple_shapes[i]
        return shape

    def __str__(self) -> str:
        if self.is_tuple:
            return "(" + ", ".join(map(str, self.tuple_shapes)) + ")"
        dims = ",".join(
            ("?" if d == UNBOUNDED else f"<={d}") if dyn else str(d)
            for d, dyn in zip(self.dimensions, self.dynamic_dimensions, strict=True)
        )
        return f"{self.element_type}[{dims}]" + (str(self.layout) if self.layout else "")

    def without_layout(self) -> Shape:
        if self.is_tuple:
            return Shape(TUPLE, tuple_shapes=tuple(s.without_layout() for s in self.tuple_shapes))
        return Shape(self.element_type, self.dimensions, self.dynamic_dimensions)


def _packed_bytes(count: int, element_type: str, layout: Layout | None) -> int:
    if layout and layout.element_size_in_bits:
        return (count * layout.element_size_in_bits + 7) // 8
    return count * element_byte_width(element_type)


def _tiled_physical_dims(dims: tuple[int, ...], layout: Layout) -> list[int]:
    """Physical (major-to-minor) dimensions padded to the first tile, as XLA's TPU tiling does.

    A tile covers the most-minor dimensions; a tile longer than the rank pads implicit leading
    1-sized dimensions (a scalar with T(128) occupies 128 elements). Later tiles such as (2,1)
    subdivide the first one; XLA's TPU tilings choose them to divide it, so they add no padding.
    """
    physical = [max(dims[i], 0) for i in reversed(layout.minor_to_major)] or []
    first = layout.tiles[0]
    padded = [1] * max(0, len(first) - len(physical)) + physical
    offset = len(padded) - len(first)
    for i, tile in enumerate(first):
        if tile > 0:
            size = padded[offset + i]
            padded[offset + i] = -(-size // tile) * tile
    return padded

