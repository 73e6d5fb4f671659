"""Bytes of a shape as XLA's cost analysis counts them.

An array is its packed data size (a sub-byte type takes a byte per element unless the layout
packs it with `E(n)`), plus four bytes per dimension when a dimension is dynamic (the size
metadata): XLA's CPU ShapeSizeBytes, which XLA's HloCostAnalysis uses by default. With
`padded=True` a tiled layout (TPU's `T(8,128)`...) rounds its dimensions up to whole tiles, the
size libtpu's own cost analysis counts (measured: docs/flops-and-remat.md); CPU and GPU layouts
have no tiles, so there it changes nothing. A tuple is its pointer table, eight bytes per
element: the elements are counted where they are produced. A token takes nothing, an opaque
value a pointer.
"""
from __future__ import annotations

from functools import lru_cache

from hloscope.model.shape import Shape
from hloscope.model.shape_text import parse_shape

POINTER_BYTES = 8


@lru_cache(maxsize=65536)
def xla_size(shape: Shape, padded: bool = False) -> int:
    if shape.is_tuple:
        return POINTER_BYTES * len(shape.tuple_shapes)
    if shape.element_type == "token":
        return 0
    if shape.element_type == "opaque":
        return POINTER_BYTES
    size = shape.padded_byte_size if padded else shape.byte_size
    if any(shape.dynamic_dimensions):
        size += 4 * len(shape.dimensions)
    return size


@lru_cache(maxsize=65536)
def size_of_text(shape_text: str, padded: bool = False) -> int:
    """xla_size of a shape given as text (instructions keep theirs; a str hashes once)."""
    return xla_size(parse_shape(shape_text), padded)


@lru_cache(maxsize=65536)
def written_bytes_of_text(shape_text: str, padded: bool = False) -> int:
    """What an instruction of this shape writes: its array, or every leaf array of a tuple."""
    shape = parse_shape(shape_text)
    return leaf_bytes(shape, padded) if shape.is_tuple else xla_size(shape, padded)


@lru_cache(maxsize=65536)
def elements_of_text(shape_text: str) -> int:
    return parse_shape(shape_text).element_count


def leaf_bytes(shape: Shape, padded: bool = False) -> int:
    """Sum of xla_size over the leaf arrays of a (possibly nested) tuple."""
    return sum(xla_size(leaf, padded) for _, leaf in shape.leaves())


def leaf_elements(shape: Shape) -> int:
    """Elements of every leaf array (XLA's ElementsInRecursive)."""
    return sum(leaf.element_count for _, leaf in shape.leaves() if leaf.is_array)


def first_array(shape: Shape) -> Shape:
    """The shape itself, or a variadic op's first output (`shape.tuple_shapes(0)`)."""
    return shape.tuple_shapes[0] if shape.is_tuple else shape
