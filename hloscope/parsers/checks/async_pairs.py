"""Asynchronous pairs and their shapes, as XLA's verifier checks them (xla/service/hlo_verifier.cc:
VerifyAsynchronousInstructionPairs and the shape handlers of each opcode).

Each start has one user, its done (an async-start or async-update: an update or done; a send or
recv: its done or a tuple, but for the root of an async computation), and each done's one operand
is its start. Shapes, layouts aside: a copy-start is `(operand, operand, u32[])` and its copy-done
the first of those; an all-reduce-done has its start's shape; an async-done has its chain's
shape at {1}. Each failure is a ParseError (exit 4) at the instruction.
"""
from __future__ import annotations

from hloscope.model.instruction import Instruction
from hloscope.model.module import Computation, HloModule
from hloscope.model.shape import TUPLE, Shape

_ASYNC = ("async-start", "async-update")
# opcode -> the opcodes its one user may have
_USERS: dict[str, tuple[str, ...]] = {
    "async-start": ("async-update", "async-done"), "async-update": ("async-update", "async-done"),
    "all-reduce-start": ("all-reduce-done",), "copy-start": ("copy-done",),
    "collective-permute-start": ("collective-permute-done",),
    "send": ("send-done", "tuple"), "recv": ("recv-done", "tuple"),
}
# opcode -> the opcodes its one operand may have
_OPERANDS: dict[str, tuple[str, ...]] = {
    "async-update": _ASYNC, "async-done": _ASYNC, "all-reduce-done": ("all-reduce-start",),
    "copy-done": ("copy-start",), "collective-permute-done": ("collective-permute-start",),
    "send-done": ("send", "get-tuple-element"), "recv-done": ("recv", "get-tuple-element"),
}
_PAIRED = frozenset(_USERS) | frozenset(_OPERANDS)


def check_async_pairs(module: HloModule) -> None:
    """Raises a located ParseError at the first start or done that is not one of a pair."""
    async_computations = {name.lstrip("%") for _, i in module.instructions()
                          if i.opcode == "async-start"
                          for name in (i.called_computation("calls"),) if name}
    for computation in module.computations.values():
        if any(i.opcode in _PAIRED for i in computation.instructions):
            _check_computation(computation, computation.name in async_computations)


def _check_computation(computation: Computation, is_async: bool) -> None:
    defined = {i.name: i for i in computation.instructions}
    users: dict[str, list[Instruction]] = {}
    for instruction in computation.instructions:
        for operand in dict.fromkeys(instruction.operands):
            users.setdefault(operand, []).append(instruction)
    for instruction in computation.instructions:
        opcode = instruction.opcode
        if opcode in _OPERANDS:
            _check_operand(instruction, defined, _OPERANDS[opcode])
        if opcode in _USERS and not (opcode in ("send", "recv") and instruction.is_root
                                     and is_async):
            _check_user(instruction, users.get(instruction.name, []), _USERS[opcode])
        if opcode in _SHAPES:
            _SHAPES[opcode](instruction, defined)


def _fail(instruction: Instruction, message: str) -> None:
    raise instruction.error(f"{message} (XLA's verifier refuses it)", instruction.operands_start)


def _check_user(instruction: Instruction, users: list[Instruction],
                expected: tuple[str, ...]) -> None:
    if len(users) != 1:
        _fail(instruction, f"the {instruction.opcode} instruction requires one consumer, found "
                           f"{len(users)}")
    if users[0].opcode not in expected:
        _fail(instruction, f"the consumer of a {instruction.opcode} instruction needs to be one "
                           f"of ({', '.join(expected)}), found {users[0].opcode}")


def _check_operand(instruction: Instruction, defined: dict[str, Instruction],
                   expected: tuple[str, ...]) -> None:
    operands = instruction.operands
    operand = defined.get(operands[0]) if len(operands) == 1 else None
    if len(operands) != 1:
        _fail(instruction, f"the {instruction.opcode} instruction takes one operand, found "
                           f"{len(operands)}")
    if operand is not None and operand.opcode not in expected:
        _fail(instruction, f"the operand of a {instruction.opcode} instruction needs to be "
                           f"{' or '.join(expected)}, found {operand.opcode}")


def _same(a: Shape, b: Shape) -> bool:
    return a.without_layout() == b.without_layout()


def _operand_shape(instruction: Instruction, defined: dict[str, Instruction]) -> Shape | None:
    operands = instruction.operands
    operand = defined.get(operands[0]) if operands else None
    return None if operand is None else operand.shape


def _check_copy_start(instruction: Instruction, defined: dict[str, Instruction]) -> None:
    operand = _operand_shape(instruction, defined)
    if operand is None:
        return
    expected = Shape(TUPLE, tuple_shapes=(operand, operand, Shape("u32")))
    if not _same(instruction.shape, expected):
        _fail(instruction, f"expected the copy-start's shape to be {expected}, not "
                           f"{instruction.shape}")


def _check_copy_done(instruction: Instruction, defined: dict[str, Instruction]) -> None:
    operand = _operand_shape(instruction, defined)
    if operand is None or not operand.is_tuple or len(operand.tuple_shapes) < 2:
        return  # a copy-done's operand is a copy-start, whose shape is checked
    if not _same(instruction.shape, operand.tuple_shapes[0]):
        _fail(instruction, f"expected the copy-done's shape to be {operand.tuple_shapes[0]}, "
                           f"its copy-start's at {{0}}, not {instruction.shape}")


def _check_all_reduce_done(instruction: Instruction, defined: dict[str, Instruction]) -> None:
    operand = _operand_shape(instruction, defined)
    if operand is not None and not _same(instruction.shape, operand):
        _fail(instruction, f"expected the all-reduce-done's shape to be its start's, {operand}, "
                           f"not {instruction.shape}")


def _check_async_done(instruction: Instruction, defined: dict[str, Instruction]) -> None:
    operand = _operand_shape(instruction, defined)
    if operand is None or not operand.is_tuple or len(operand.tuple_shapes) < 2:
        return  # opcode_rules.py refuses an async shape of another form
    if not _same(instruction.shape, operand.tuple_shapes[1]):
        _fail(instruction, "the async-done expects the shape of output to match the async shape "
                           f"at index {{1}} ({instruction.shape} vs {operand.tuple_shapes[1]})")


_SHAPES = {"copy-start": _check_copy_start, "copy-done": _check_copy_done,
           "all-reduce-done": _check_all_reduce_done, "async-done": _check_async_done}
