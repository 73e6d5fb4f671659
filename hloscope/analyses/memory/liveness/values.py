"""Logical buffers (XLA's HloValues) and the value trees instructions hold.

Every instruction's output is a tree shaped like its shape: an array is one value, a tuple is a
value for its pointer table plus one subtree per element. `ValueTree` is either a `Value` (an
array, token or opaque leaf) or a `TupleNode`. Several positions can hold the same value: a
get-tuple-element holds its operand's element, a bitcast its operand's value, a while body's
parameter the loop's carried values. XLA's dataflow analysis is in SSA form for buffer
assignment: where control flow merges different values (a loop's carried element, a
conditional's result) a *phi* value stands for them; phis that merge only one value in the end
are replaced by it (see `phis.py`).
"""
from __future__ import annotations

from collections.abc import Iterator

from hloscope.analyses.cost.sizes import POINTER_BYTES
from hloscope.errors import ParseError
from hloscope.model.instruction import Instruction
from hloscope.model.shape import Shape

Index = tuple[int, ...]


class Value:
    """One logical buffer: defined by `instruction` at shape `index`."""

    __slots__ = ("id", "instruction", "index", "shape", "is_phi", "phi_inputs", "positions",
                 "uses", "_bytes", "space")

    def __init__(self, value_id: int, instruction: Instruction, index: Index, shape: Shape,
                 is_phi: bool = False) -> None:
        self.id = value_id
        self.instruction = instruction
        self.index = index
        self.shape = shape
        self.is_phi = is_phi
        self.phi_inputs: list[Value] = []
        self.positions: list[tuple[Instruction, Index]] = [(instruction, index)]
        self.uses: list[tuple[Instruction, int, Index]] = []
        self._bytes = -1
        self.space: int | None = None  # set where XLA's color is not the shape's (dataflow.py)

    def __repr__(self) -> str:
        return f"<Value {self.name}{' phi' if self.is_phi else ''}>"

    @property
    def name(self) -> str:
        """`fusion.3{}` or `while.5{1}`: how XLA's dumps name a value."""
        return self.instruction.name + "{" + ",".join(map(str, self.index)) + "}"

    @property
    def bytes(self) -> int:
        if self._bytes < 0:
            self._bytes = shape_bytes(self.shape)
        return self._bytes

    @property
    def padded_bytes(self) -> int:
        if self.shape.is_tuple:
            return POINTER_BYTES * len(self.shape.tuple_shapes)
        return self.shape.padded_byte_size

    @property
    def memory_space(self) -> int:
        return self.shape.memory_space if self.space is None else self.space


def shape_bytes(shape: Shape) -> int:
    """XLA's ShapeUtil::ByteSizeOf(shape, pointer_size=8): a tuple is its pointer table."""
    if shape.is_tuple:
        return POINTER_BYTES * len(shape.tuple_shapes)
    return shape.byte_size


class TupleNode:
    """A tuple position: the value of its pointer table and one subtree per element."""

    __slots__ = ("value", "children")

    def __init__(self, value: Value, children: list[ValueTree]) -> None:
        self.value = value
        self.children = children


ValueTree = Value | TupleNode


def top_value(tree: ValueTree) -> Value:
    return tree.value if isinstance(tree, TupleNode) else tree


class TreeIndexError(IndexError):
    """A shape index a value tree does not have: the module's shapes disagree with each other
    (a get-tuple-element past its operand's tuple, an index below an array), which XLA's parser
    lets through and its verifier refuses."""


def subtree(tree: ValueTree, index: Index) -> ValueTree:
    for depth, i in enumerate(index):
        if not isinstance(tree, TupleNode):
            raise TreeIndexError(f"shape index {{{_joined(index)}}} goes below an array at "
                                 f"{{{_joined(index[:depth])}}}")
        if not 0 <= i < len(tree.children):
            raise TreeIndexError(f"shape index {{{_joined(index)}}} is out of range: "
                                 f"{{{_joined(index[:depth])}}} is a tuple of "
                                 f"{len(tree.children)} element(s)")
        tree = tree.children[i]
    return tree


def shape_error(instruction: Instruction, error: TreeIndexError) -> ParseError:
    """The located error (exit 4) for a TreeIndexError met at `instruction`."""
    return instruction.error(f"{instruction.opcode} {instruction.name}: {error}; its shape does "
                             "not fit its operands' (XLA's verifier refuses this module)",
                             instruction.operands_start)


def _joined(index: Index) -> str:
    return ",".join(map(str, index))


def walk(tree: ValueTree, prefix: Index = ()) -> Iterator[tuple[Index, Value]]:
    """(index, value) for every position of a tree, the tuple table before its elements."""
    if isinstance(tree, TupleNode):
        yield prefix, tree.value
        for i, child in enumerate(tree.children):
            yield from walk(child, (*prefix, i))
    else:
        yield prefix, tree

