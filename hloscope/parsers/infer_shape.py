"""Result shapes of instructions written without one (`n = negate(p)`), as XLA's parser infers them.

XLA's parser (xla/hlo/parser/hlo_parser.cc, `CanInferShape`) lets an instruction omit its result
shape for a fixed set of opcodes and infers it with ShapeInference; every other opcode needs the
shape written out ("cannot infer shape for opcode"). This module infers the shapes of the opcodes
of that set whose rule is a function of operand shapes and simple attributes; for the few left
(convolution, gather, scatter, fft, batch-norm, ragged-dot, select-and-scatter) it
asks for the shape to be written. Inferred shapes carry no layout (XLA gives them its default one),
except a transpose's, which permutes its operand's as ShapeInference does.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from hloscope.model.attributes import WindowDimension
from hloscope.model.instruction import Instruction
from hloscope.model.opcodes import ELEMENTWISE_ARITHMETIC
from hloscope.model.shape import TUPLE, Layout, Shape
from hloscope.model.shape_text import TextSyntaxError

# XLA's CanInferShape returns true for these (jaxlib 0.10.2's parser agrees, tests/parsers).
XLA_INFERS = frozenset({
    "abs", "add", "add-dependency", "after-all", "atan2", "batch-norm-grad",
    "batch-norm-inference", "batch-norm-training", "broadcast", "call", "ceil", "cholesky",
    "clamp", "count-leading-zeros", "compare", "complex", "concatenate", "conditional",
    "convolution", "copy", "cosine", "opt-barrier", "divide", "domain", "dot", "erf",
    "exponential", "exponential-minus-one", "fft", "floor", "gather", "get-dimension-size",
    "set-dimension-size", "get-tuple-element", "imag", "is-finite", "log", "log-plus-one",
    "logistic", "and", "not", "or", "xor", "map", "maximum", "minimum", "multiply", "negate",
    "pad", "partition-id", "popcnt", "power", "ragged-dot", "real", "reduce", "remainder",
    "replica-id", "reverse", "round-nearest-afz", "round-nearest-even", "rsqrt", "scatter",
    "select", "shift-left", "shift-right-arithmetic", "shift-right-logical", "sign", "sine",
    "sqrt", "cbrt", "reduce-window", "select-and-scatter", "sort", "subtract", "tan", "tanh",
    "transpose", "triangular-solve", "tuple", "while", "topk",
})

_SAME_AS_FIRST = (ELEMENTWISE_ARITHMETIC - {"compare", "complex", "imag", "real", "is-finite",
                                            "select", "clamp", "convert", "bitcast-convert",
                                            "reduce-precision", "stochastic-convert"}) \
    | {"copy", "add-dependency", "domain", "reverse", "cholesky"}
_REAL_OF = {"c64": "f32", "c128": "f64"}
_COMPLEX_OF = {"f32": "c64", "f64": "c128"}


class InferenceError(ValueError):
    """Why a shape cannot be inferred; the caller locates it."""


def _array(element_type: str, dims: tuple[int, ...], dynamic: tuple[bool, ...] = ()) -> Shape:
    return Shape(element_type, dims, dynamic or (False,) * len(dims))


def _like(shape: Shape, element_type: str) -> Shape:
    return Shape(element_type, shape.dimensions, shape.dynamic_dimensions)


def _drop(shape: Shape, dims: tuple[int, ...], element_type: str | None = None) -> Shape:
    keep = [i for i in range(shape.rank) if i not in dims]
    return Shape(element_type or shape.element_type, tuple(shape.dimensions[i] for i in keep),
                 tuple(shape.dynamic_dimensions[i] for i in keep))


def infer(instruction: Instruction, operands: list[Shape],
          root_shape: Callable[[str], Shape]) -> Shape:
    """The result shape XLA infers for `instruction`; `root_shape(name)` is a computation's."""
    opcode = instruction.opcode
    if opcode not in XLA_INFERS:
        raise InferenceError(f"cannot infer shape for opcode: {opcode}; XLA requires the result "
                             "shape to be written")
    rule = _RULES.get(opcode)
    if rule is None and opcode in _SAME_AS_FIRST:
        rule = _same_as_first
    if rule is None:
        raise InferenceError(f"hloscope does not infer the result shape of a shape-less {opcode} "
                             "(XLA does); write the shape")
    try:
        shape = rule(instruction, operands, root_shape)
        return shape if opcode == "transpose" else shape.without_layout()
    except (IndexError, TypeError, ValueError, KeyError, TextSyntaxError):
        raise InferenceError(f"failed to infer shape for opcode: {opcode}: its operands or "
                             "attributes do not fit it") from None


Rule = Callable[[Instruction, list[Shape], Callable[[str], Shape]], Shape]


def _same_as_first(ins: Instruction, ops: list[Shape], root: Callable[[str], Shape]) -> Shape:
    return ops[0]


def _tuple(ins: Instruction, ops: list[Shape], root: Callable[[str], Shape]) -> Shape:
    return Shape(TUPLE, tuple_shapes=tuple(ops))


def _get_tuple_element(ins: Instruction, ops: list[Shape],
                       root: Callable[[str], Shape]) -> Shape:
    index = ins.tuple_index
    if index is None or not ops[0].is_tuple:
        raise ValueError
    return ops[0].tuple_shapes[index]


def _broadcast(ins: Instruction, ops: list[Shape], root: Callable[[str], Shape]) -> Shape:
    # ShapeInference::InferBroadcastShape(operand, broadcast_sizes): the sizes come first.
    sizes = ins.dimensions or ()
    return _array(ops[0].element_type, tuple(sizes) + ops[0].dimensions)


def _concatenate(ins: Instruction, ops: list[Shape], root: Callable[[str], Shape]) -> Shape:
    (axis,) = ins.dimensions or ()  # none: a ValueError, refused by `infer`
    dims = list(ops[0].dimensions)
    dims[axis] = sum(op.dimensions[axis] for op in ops)
    return _array(ops[0].element_type, tuple(dims))


def _transpose(ins: Instruction, ops: list[Shape], root: Callable[[str], Shape]) -> Shape:
    """ShapeUtil::PermuteDimensions: the operand's layout (its default one when it has none)
    permuted with the dimensions, so the bytes stay in place: a bitcast (0 bytes accessed)."""
    order = ins.dimensions or ()
    operand = ops[0]
    if sorted(order) != list(range(operand.rank)):
        raise ValueError
    position = {dimension: index for index, dimension in enumerate(order)}
    layout = operand.layout or Layout(tuple(reversed(range(operand.rank))))
    permuted = replace(layout, minor_to_major=tuple(position[d] for d in layout.minor_to_major))
    return replace(_array(operand.element_type, tuple(operand.dimensions[d] for d in order)),
                   layout=permuted)


def _pad(ins: Instruction, ops: list[Shape], root: Callable[[str], Shape]) -> Shape:
    config = (ins.raw_attribute("padding") or "").strip()
    items = config.split("x") if config else []
    if len(items) != ops[0].rank:
        raise ValueError
    dims = []
    for size, item in zip(ops[0].dimensions, items, strict=True):
        low, high, *interior = (int(v) for v in item.split("_"))
        inner = interior[0] if interior else 0
        dims.append(low + high + size + max(size - 1, 0) * inner)
    return _array(ops[0].element_type, tuple(dims))


def _dot(ins: Instruction, ops: list[Shape], root: Callable[[str], Shape]) -> Shape:
    lhs, rhs = ops
    lhs_batch, rhs_batch = ins.lhs_batch_dims, ins.rhs_batch_dims
    lhs_free = [lhs.dimensions[i] for i in range(lhs.rank)
                if i not in lhs_batch and i not in ins.lhs_contracting_dims]
    rhs_free = [rhs.dimensions[i] for i in range(rhs.rank)
                if i not in rhs_batch and i not in ins.rhs_contracting_dims]
    batch = [lhs.dimensions[i] for i in lhs_batch]
    return _array(lhs.element_type, tuple(batch + lhs_free + rhs_free))


def _reduce(ins: Instruction, ops: list[Shape], root: Callable[[str], Shape]) -> Shape:
    half = len(ops) // 2
    reduced = tuple(ins.dimensions or ())
    results = [_drop(op, reduced, init.element_type)
               for op, init in zip(ops[:half], ops[half:], strict=True)]
    return results[0] if half == 1 else Shape(TUPLE, tuple_shapes=tuple(results))


def _reduce_window(ins: Instruction, ops: list[Shape], root: Callable[[str], Shape]) -> Shape:
    """ShapeInference::InferReduceWindowShape of one input (XLA's parser infers no other: a
    variadic one needs its shape written): the window's output (InferWindowOutputShape,
    window_util::StridedBound) in the init value's element type."""
    window = ins.window
    if len(ops) != 2 or len(window) != ops[0].rank:
        raise ValueError
    dims = tuple(_strided_bound(size, dim) for size, dim in zip(ops[0].dimensions, window,
                                                                strict=True))
    return _array(ops[1].element_type, dims)


def _strided_bound(size: int, window: WindowDimension) -> int:
    dilated_base = (size - 1) * window.lhs_dilation + 1 if size > 0 else 0
    bound = window.padding_low + dilated_base + window.padding_high
    dilated_window = (window.size - 1) * window.rhs_dilation + 1
    if window.stride < 1 or window.size < 1:
        raise ValueError
    return 0 if dilated_window > bound else (bound - dilated_window) // window.stride + 1


def _map(ins: Instruction, ops: list[Shape], root: Callable[[str], Shape]) -> Shape:
    return _like(ops[0], root(ins.required_called_computation("to_apply")).element_type)


def _sort(ins: Instruction, ops: list[Shape], root: Callable[[str], Shape]) -> Shape:
    return ops[0] if len(ops) == 1 else Shape(TUPLE, tuple_shapes=tuple(ops))


def _topk(ins: Instruction, ops: list[Shape], root: Callable[[str], Shape]) -> Shape:
    k = int(ins.raw_attribute("k") or "")
    dims = ops[0].dimensions[:-1] + (k,)
    return Shape(TUPLE, tuple_shapes=(_array(ops[0].element_type, dims), _array("s32", dims)))


def _called_root(key: str) -> Rule:
    def rule(ins: Instruction, ops: list[Shape], root: Callable[[str], Shape]) -> Shape:
        return root(ins.required_called_computation(key))
    return rule


def _conditional(ins: Instruction, ops: list[Shape], root: Callable[[str], Shape]) -> Shape:
    names = ins.called_computations
    if not names:
        raise ValueError
    return root(names[0])


def _fixed(shape: Shape) -> Rule:
    return lambda ins, ops, root: shape


_RULES: dict[str, Rule] = {
    "tuple": _tuple,
    "get-tuple-element": _get_tuple_element,
    "broadcast": _broadcast,
    "concatenate": _concatenate,
    "transpose": _transpose,
    "pad": _pad,
    "dot": _dot,
    "reduce": _reduce,
    "reduce-window": _reduce_window,
    "map": _map,
    "sort": _sort,
    "topk": _topk,
    "call": _called_root("to_apply"),
    "while": lambda ins, ops, root: ops[0],
    "conditional": _conditional,
    "compare": lambda ins, ops, root: _like(ops[0], "pred"),
    "is-finite": lambda ins, ops, root: _like(ops[0], "pred"),
    "real": lambda ins, ops, root: _like(ops[0], _REAL_OF.get(ops[0].element_type,
                                                              ops[0].element_type)),
    "imag": lambda ins, ops, root: _like(ops[0], _REAL_OF.get(ops[0].element_type,
                                                              ops[0].element_type)),
    "complex": lambda ins, ops, root: _like(ops[0], _COMPLEX_OF[ops[0].element_type]),
    "select": lambda ins, ops, root: ops[1],
    "clamp": lambda ins, ops, root: ops[1],
    "triangular-solve": lambda ins, ops, root: ops[1],
    "opt-barrier": lambda ins, ops, root: ops[0],
    "after-all": _fixed(Shape("token")),
    "partition-id": _fixed(_array("u32", ())),
    "replica-id": _fixed(_array("u32", ())),
    "get-dimension-size": _fixed(_array("s32", ())),
}
