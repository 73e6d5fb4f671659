"""Called computations' signatures, as XLA's verifier checks them (xla/service/hlo_verifier.cc).

XLA's parser lets these through; its verifier refuses them, and every analysis relies on them: a
call or async-start passes as many operands as its computation has parameters (a fusion at least
as many: XLA's verifier lets it pass more, unused), each of the parameter's shape, and its
computation's root has the instruction's result shape (an async-start's is its shape's element
{1}); a while loop's operand, result, body parameter, body root and condition parameter share one
shape and its condition returns pred[]; a conditional passes one operand per branch after the
branch index, each branch's one parameter has that operand's shape and its root the
conditional's shape; a convolution's `dim_labels` name each dimension of its input, kernel and
result once (b, f and the spatial digits; i, o and the digits for the kernel), as XLA's shape
inference requires. Shapes compare as XLA's ShapeUtil::Compatible does: layouts aside. Each
failure is a ParseError (exit 4) at the caller.
"""
from __future__ import annotations

from collections.abc import Callable

from hloscope.model.instruction import Instruction
from hloscope.model.module import Computation, HloModule
from hloscope.model.shape import Shape

_Operands = dict[str, Instruction]


def check_signatures(module: HloModule) -> None:
    """Raises a located ParseError at the first caller whose computation does not fit it."""
    for computation in module.computations.values():
        callers = [i for i in computation.instructions if i.opcode in _CHECKS]
        if not callers:
            continue
        defined = {i.name: i for i in computation.instructions}
        for instruction in callers:
            _CHECKS[instruction.opcode](module, instruction, defined)


def _callee(module: HloModule, instruction: Instruction, key: str) -> Computation | None:
    name = instruction.called_computation(key)
    return None if name is None else module.computations.get(name.lstrip("%"))


def _operand_shapes(instruction: Instruction, defined: _Operands) -> list[Shape]:
    return [defined[name].shape for name in instruction.operands if name in defined]


def _same(a: Shape, b: Shape) -> bool:
    return a.without_layout() == b.without_layout()


def _fail(instruction: Instruction, message: str) -> None:
    raise instruction.error(f"{instruction.opcode} {instruction.name}: {message} (XLA's verifier "
                            "refuses it)", instruction.operands_start)


def _check_arguments(instruction: Instruction, callee: Computation,
                     shapes: list[Shape]) -> None:
    parameters = callee.parameters
    if len(parameters) > len(shapes) or (len(parameters) < len(shapes)
                                          and instruction.opcode != "fusion"):
        _fail(instruction, f"passes {len(shapes)} operand(s) to {callee.name}, which takes "
                           f"{len(parameters)} parameter(s)")
    for number, (parameter, shape) in enumerate(zip(parameters, shapes, strict=False)):
        if not _same(parameter.shape, shape):
            _fail(instruction, f"operand {number} has shape {shape}, but {callee.name}'s "
                               f"parameter {parameter.name} has shape {parameter.shape}")


def _check_result(instruction: Instruction, callee: Computation, expected: Shape) -> None:
    root = callee.root
    if not _same(root.shape, expected):
        _fail(instruction, f"its shape {expected} is not that of {callee.name}'s root "
                           f"{root.name}, {root.shape}")


def _check_call(module: HloModule, instruction: Instruction, defined: _Operands) -> None:
    key = "to_apply" if instruction.opcode == "call" else "calls"
    callee = _callee(module, instruction, key)
    if callee is None:
        return
    _check_arguments(instruction, callee, _operand_shapes(instruction, defined))
    shape = instruction.shape
    if instruction.opcode == "async-start":
        if not (shape.is_tuple and len(shape.tuple_shapes) >= 2):
            return  # the async checks refuse this form
        shape = shape.tuple_shapes[1]
    _check_result(instruction, callee, shape)


def _check_while(module: HloModule, instruction: Instruction, defined: _Operands) -> None:
    """XLA's ShapeVerifier::HandleWhile: the operand is each callee's parameter, the body's root
    is the loop's shape; the operand need not be the loop's shape (XLA's
    while_loop_constant_sinking_test verifies a loop that grows its tuple)."""
    shape = instruction.shape
    argument = _operand_shapes(instruction, defined)[:1] or [shape]
    for key in ("condition", "body"):
        callee = _callee(module, instruction, key)
        if callee is None:
            continue
        _check_arguments(instruction, callee, argument)
        if key == "body":
            _check_result(instruction, callee, shape)
        elif not _same(callee.root.shape, Shape("pred", ())):
            _fail(instruction, f"its condition {callee.name} returns {callee.root.shape}, "
                               "not pred[]")


def _check_conditional(module: HloModule, instruction: Instruction, defined: _Operands) -> None:
    names = instruction.called_computations  # branch_computations, or true then false
    shapes = _operand_shapes(instruction, defined)
    if not shapes:
        _fail(instruction, "expects at least 1 operands (the branch index), but has 0 operands")
    if len(shapes) != len(names) + 1:
        _fail(instruction, f"has {len(names)} branch(es) and {len(shapes) - 1} branch "
                           "operand(s); it takes one per branch after the branch index")
    for name, operand in zip(names, shapes[1:], strict=True):
        callee = module.computations.get(name.lstrip("%"))
        if callee is not None:
            _check_arguments(instruction, callee, [operand])
            _check_result(instruction, callee, instruction.shape)


def _check_dim_labels(module: HloModule, instruction: Instruction, defined: _Operands) -> None:
    labels = instruction.dim_labels
    shapes = _operand_shapes(instruction, defined)
    if labels is None or len(shapes) != 2:
        return
    parts = (("input", labels.input_labels, shapes[0], "bf"),
             ("kernel", labels.kernel_labels, shapes[1], "io"),
             ("output", labels.output_labels, instruction.shape, "bf"))
    for role, text, shape, named in parts:
        rank = len(shape.dimensions)
        expected = set(named) | {str(d) for d in range(rank - 2)}
        if len(text) != rank or set(text) != expected:
            _fail(instruction, f"dim_labels' {role} part '{text}' does not name each of the "
                               f"{rank} dimensions of {shape} once ({named} and 0..{rank - 3})")


_CHECKS: dict[str, Callable[[HloModule, Instruction, _Operands], None]] = {
    "fusion": _check_call, "call": _check_call, "async-start": _check_call,
    "while": _check_while, "conditional": _check_conditional, "convolution": _check_dim_labels,
}
