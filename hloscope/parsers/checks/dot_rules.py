"""The scales of a scaled-dot, as XLA's verifier checks them (xla/service/hlo_verifier.cc:
HandleScaledDot, ScalesShapeVerifier, IsNoOpScale).

A scaled-dot is `(lhs, rhs, lhs_scale, rhs_scale)`. A scale is a no-op where it has its bf16
operand's element type, every dimension 1, and the operand a dimension other than 1; any other
scale has its operand's rank and divides each of its dimensions. Not both scales may be scalars.
Each failure is a ParseError (exit 4) at the instruction.
"""
from __future__ import annotations

from collections.abc import Callable

from hloscope.model.instruction import Instruction
from hloscope.model.shape import Shape
from hloscope.parsers.checks.collective_rules import Defined, fail, operand_shapes


def _is_no_op_scale(operand: Shape, scale: Shape) -> bool:
    return (scale.element_type == operand.element_type == "bf16"
            and all(d == 1 for d in scale.dimensions) and any(d != 1 for d in operand.dimensions))


def _check_scale(instruction: Instruction, names: tuple[str, str], shapes: tuple[Shape, Shape]
                 ) -> None:
    operand, scale = shapes
    if _is_no_op_scale(operand, scale):
        return
    at = instruction.operands_start
    if scale.rank != operand.rank:
        fail(instruction, f"Scale operand {names[1]} has a different number of dimensions than "
                          f"operand {names[0]}", at)
    for i, (size, scale_size) in enumerate(zip(operand.dimensions, scale.dimensions, strict=True)):
        if scale_size <= 0 or size % scale_size:
            fail(instruction, f"Dimension {i} of operand {names[0]} ({operand}) should be a "
                              f"multiple of dimension {i} of scale operand {names[1]} ({scale})",
                 at)


def check_scaled_dot(instruction: Instruction, defined: Defined) -> None:
    shapes = operand_shapes(instruction, defined)
    names = instruction.operands
    if shapes is None or len(shapes) != 4 or not all(s.is_array for s in shapes):
        return
    _check_scale(instruction, (names[0], names[2]), (shapes[0], shapes[2]))
    _check_scale(instruction, (names[1], names[3]), (shapes[1], shapes[3]))
    if shapes[2].rank == 0 and shapes[3].rank == 0:
        fail(instruction, "At least one of the scales should be not a scalar",
             instruction.operands_start)


DOT_RULES: dict[str, Callable[[Instruction, Defined], None]] = {"scaled-dot": check_scaled_dot}
