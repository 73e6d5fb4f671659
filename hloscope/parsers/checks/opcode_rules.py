"""The shape rules XLA's parser applies to some opcodes as it builds them (xla/hlo/parser/
hlo_parser.cc, `CreateInstruction` and `ParseComputation`), and the one it applies to the module.

- an infeed has a non-empty tuple shape;
- a broadcast of a non-scalar operand has `dimensions=`;
- a conditional's branch index is a scalar: `pred[]` takes `true_computation` and
  `false_computation`, `s32[]` takes `branch_computations`, any other type is refused;
- a custom-call's `operand_layout_constraints` has one shape per operand, each compatible with it;
- an async-start's shape is `((operands), outputs, ...)`; an async-update has its operand's shape;
  an `X-update` or `X-done` continues a chain whose wrapped op is X;
- a window's `pad=` is `low_high` in each dimension;
- a computation's header result (`(...) -> f32[4]`) is compatible with its root's shape;
- each async computation is called by one async-start.

Shapes compare as ShapeUtil::Compatible does, layouts aside. Each failure is a ParseError (exit 4)
at the instruction or computation.
"""
from __future__ import annotations

import re
from collections.abc import Callable

from hloscope.errors import ParseError, SourceLocation
from hloscope.model.instruction import Instruction
from hloscope.model.module import Computation, HloModule
from hloscope.model.scan import split_top_level
from hloscope.model.shape import Shape
from hloscope.model.shape_text import TextSyntaxError, parse_shape

_Defined = dict[str, Instruction]
_WINDOW_PAD = re.compile(r"\bpad=([^\s}]*)")
_PAD_DIMENSION = re.compile(r"-?\d+_-?\d+")
_ASYNC_SUFFIXES = ("-update", "-done")


def check_opcode_rules(module: HloModule) -> None:
    """Raises a located ParseError at the first instruction or computation that breaks a rule."""
    async_callers: dict[str, Instruction] = {}
    for computation in module.computations.values():
        defined: _Defined = {}
        for instruction in computation.instructions:
            rule = _RULES.get(instruction.opcode)
            if rule is not None:
                rule(instruction, defined, module)
            if instruction.opcode == "async-start":
                _check_single_async_caller(instruction, async_callers)
            if "pad=" in instruction.text and "window=" in instruction.text:
                _check_window_pad(instruction)
            defined[instruction.name] = instruction
        _check_header_result(computation)


def _compatible(a: Shape, b: Shape) -> bool:
    return a.without_layout() == b.without_layout()


def _operand(instruction: Instruction, defined: _Defined, number: int) -> Instruction | None:
    operands = instruction.operands
    return defined.get(operands[number]) if len(operands) > number else None


def _check_infeed(instruction: Instruction, defined: _Defined, module: HloModule) -> None:
    shape = instruction.shape
    if not shape.is_tuple or not shape.tuple_shapes:
        raise instruction.error("infeed must have a non-empty tuple shape", 0)


def _check_broadcast(instruction: Instruction, defined: _Defined, module: HloModule) -> None:
    if "dimensions" in instruction.text[instruction.operands_end:]:
        return
    operand = _operand(instruction, defined, 0)
    if operand is not None and (operand.shape.is_tuple or operand.shape.dimensions):
        raise instruction.error("attribute dimensions is expected but not seen (a broadcast of "
                                f"a non-scalar operand, {operand.shape})",
                                instruction.operands_end)


def _check_conditional(instruction: Instruction, defined: _Defined, module: HloModule) -> None:
    index = _operand(instruction, defined, 0)
    if index is None:
        return  # signatures.py refuses a conditional without operands
    shape, at = index.shape, instruction.operands_start
    if shape.is_tuple or shape.dimensions:
        raise instruction.error(f"the first operand (the branch index) must be a scalar, not "
                                f"{shape}", at)
    names = instruction.attribute_names
    wrong: tuple[str, ...]
    needed: tuple[str, ...]
    if shape.element_type == "pred":
        wrong, needed = ("branch_computations",), ("true_computation", "false_computation")
    elif shape.element_type == "s32":
        wrong, needed = ("true_computation", "false_computation"), ("branch_computations",)
    else:
        raise instruction.error(f"the first operand (the branch index) must be a scalar of PRED "
                                f"or S32, not {shape}", at)
    for key in wrong:
        if key in names:
            raise instruction.error(f"unexpected attribute \"{key}\": a branch index of type "
                                    f"{shape.element_type} takes {' and '.join(needed)}",
                                    instruction.text.find(key, instruction.operands_end))
    for key in needed:
        if key not in names:
            raise instruction.error(f"attribute {key} is expected but not seen (a branch index "
                                    f"of type {shape.element_type})", instruction.operands_end)


def _check_layout_constraints(instruction: Instruction, defined: _Defined,
                              module: HloModule) -> None:
    if "operand_layout_constraints" not in instruction.text:
        return
    value = instruction.raw_attribute("operand_layout_constraints")
    if value is None:
        return
    text = value.strip()
    offset = instruction.text.find(text, instruction.operands_end)
    body = text[1:-1] if text.startswith("{") and text.endswith("}") else text
    try:
        shapes = [parse_shape(body[start:end]) for start, end in
                  split_top_level(body, 0, len(body)) if body[start:end].strip()]
    except TextSyntaxError as error:
        raise instruction.error(f"operand_layout_constraints: {error.message}", offset) from None
    operands = instruction.operands
    if len(shapes) != len(operands):
        raise instruction.error(f"Expected {len(operands)} operand layout constraints, "
                                f"{len(shapes)} given", offset)
    for number, (shape, name) in enumerate(zip(shapes, operands, strict=True)):
        operand = defined.get(name)
        if operand is not None and not _compatible(shape, operand.shape):
            raise instruction.error(f"operand layout constraint shape {shape} for operand "
                                    f"{number} is not compatible with operand shape "
                                    f"{operand.shape}", offset)


def _check_async_start(instruction: Instruction, defined: _Defined, module: HloModule) -> None:
    shape = instruction.shape
    if not (shape.is_tuple and len(shape.tuple_shapes) >= 2 and shape.tuple_shapes[0].is_tuple):
        raise instruction.error("async-start expects the op shape to be in the form of "
                                "((async-operands), async-outputs, state)",
                                instruction.operands_start)


def _check_async_continuation(instruction: Instruction, defined: _Defined,
                              module: HloModule) -> None:
    operand = _operand(instruction, defined, 0)
    if operand is None:
        return  # async_chains.py refuses it
    if instruction.opcode == "async-update" and not _compatible(operand.shape,
                                                                instruction.shape):
        raise instruction.error(f"async-update expects its shape to be its operand's, "
                                f"{operand.shape}", instruction.operands_start)
    written = _written_opcode(instruction)
    suffix = next((s for s in _ASYNC_SUFFIXES if written.endswith(s)), None)
    if written in ("async-update", "async-done") or suffix is None:
        return
    wrapped = _wrapped_opcode(operand, defined, module)
    if wrapped is not None and written[: -len(suffix)] != wrapped:
        raise instruction.error(f"expected the async wrapped opcode to be {wrapped}, but got "
                                f"{written[: -len(suffix)]}", instruction.operands_start - 1)


def _written_opcode(instruction: Instruction) -> str:
    """The opcode as written in the text (`add-update` for a shorthand update)."""
    head = instruction.text[: max(instruction.operands_start - 1, 0)].rstrip()
    match = re.search(r"([A-Za-z][\w\-]*)$", head)
    return match.group(1) if match else instruction.opcode


def _wrapped_opcode(start: Instruction, defined: _Defined, module: HloModule) -> str | None:
    """The opcode of the root of the computation an async chain's start wraps."""
    seen = 0
    while start.opcode == "async-update" and seen < len(defined):
        previous = _operand(start, defined, 0)
        if previous is None:
            return None
        start, seen = previous, seen + 1
    name = start.called_computation("calls") if start.opcode == "async-start" else None
    callee = module.computations.get(name.lstrip("%")) if name else None
    return callee.root.opcode if callee is not None and callee.instructions else None


def _check_single_async_caller(instruction: Instruction, callers: dict[str, Instruction]) -> None:
    name = instruction.called_computation("calls")
    if name is None:
        return
    first = callers.setdefault(name.lstrip("%"), instruction)
    if first is not instruction:
        raise instruction.error(f"computation {name} is called by more than one async op (also "
                                f"{first.name} at line {first.line})",
                                max(instruction.text.find(name, instruction.operands_end), 0))


def _check_window_pad(instruction: Instruction) -> None:
    window = instruction.raw_attribute("window")
    if window is None:
        return
    match = _WINDOW_PAD.search(window)
    if match is None:
        return
    if not all(_PAD_DIMENSION.fullmatch(part) for part in match.group(1).split("x")):
        raise instruction.error("expects padding_low and padding_high separated by '_' in each "
                                f"dimension of window pad=, got {match.group(1)}",
                                max(instruction.text.find(match.group(0)), 0))


def _check_header_result(computation: Computation) -> None:
    if not computation.header_result or not computation.instructions:
        return
    root = computation.root
    try:
        declared = parse_shape(computation.header_result)
    except TextSyntaxError as error:
        raise _computation_error(computation, root, f"its result shape: {error.message}") \
            from None
    if not _compatible(declared, root.shape):
        raise _computation_error(computation, root, f"shape of computation {computation.name}, "
                                 f"{declared}, is not compatible with that of its root "
                                 f"instruction {root.name}, {root.shape}")


def _computation_error(computation: Computation, root: Instruction, message: str) -> ParseError:
    return ParseError(message, SourceLocation(root.source, computation.line, 1))


_RULES: dict[str, Callable[[Instruction, _Defined, HloModule], None]] = {
    "infeed": _check_infeed,
    "broadcast": _check_broadcast,
    "conditional": _check_conditional,
    "custom-call": _check_layout_constraints,
    "async-start": _check_async_start,
    "async-update": _check_async_continuation,
    "async-done": _check_async_continuation,
}
