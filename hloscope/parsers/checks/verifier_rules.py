"""Opcode rules of XLA's verifier that its parser lets through (xla/service/hlo_verifier.cc,
ShapeVerifier): a compare's `type=` fits its operands' element type (FLOAT or TOTALORDER for
floating point, SIGNED for signed integers, UNSIGNED for unsigned integers and pred); an iota is
an array of rank 1 or more, not pred, whose `iota_dimension` is one of its dimensions; an rng
takes two scalars of its result's element type (a floating one for rng_normal); a select chooses
between arrays of its result's element type; an async-start's shape at {0} holds its operands'
shapes; a composite call has a `composite.name`, a non-empty `composite.attributes` and a
non-negative `composite.version` where given; a reduce-scatter scatters along one of its
operand's dimensions, over replica groups of one size that divide it into its result;
`use_global_device_ids=true` comes with replica groups; a scatter's
`scatter_dims_to_operand_dims` are dimensions of its operand; a fusion, while or conditional
runs computations of its own computation's execution thread. Collective-permutes and
ragged-all-to-alls: `collective_rules.py`; scaled-dots: `dot_rules.py`; rules across
instructions: `module_rules.py`; shardings: `sharding_rules.py`; original values:
`original_value.py`. (An unbounded dimension, `f32[?]`, which XLA's default verifier refuses, is
kept: XLA's own translation tests hold such modules.)
Each failure is a ParseError (exit 4) at the instruction.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable

from hloscope.model.instruction import Instruction
from hloscope.model.module import HloModule
from hloscope.model.replica_groups import parse_replica_groups
from hloscope.parsers.checks.collective_rules import COLLECTIVE_RULES
from hloscope.parsers.checks.dot_rules import DOT_RULES
from hloscope.parsers.checks.module_rules import OPCODES as MODULE_OPCODES
from hloscope.parsers.checks.module_rules import ModuleRules
from hloscope.parsers.checks.original_value import check_original_value
from hloscope.parsers.checks.sharding_rules import (
    check_sharding_consistency,
    check_sharding_rank,
)

_Defined = dict[str, Instruction]
_COMPARE_TYPE = re.compile(r"\btype=\s*([A-Za-z]+)")
_FLOATING = ("f", "bf")
_MAIN_THREAD = "main"
# (a call or custom-call may run another thread's computation unless an option says otherwise)
_THREADED_CALLERS = ("fusion", "while", "conditional")
_SHARING_CALLERS = ("while", "conditional")
_ACROSS = MODULE_OPCODES | {*_SHARING_CALLERS, *_THREADED_CALLERS}


def check_verifier_rules(module: HloModule) -> bool:
    """Raises a located ParseError at the first instruction that breaks a rule; says whether
    the module holds a buffer shape `b(...)` (for `buffer_rules.py`)."""
    threads = {name: c.execution_thread or _MAIN_THREAD for name, c in module.computations.items()}
    threaded = len(set(threads.values())) > 1
    across = ModuleRules()
    buffers = False
    for computation in module.computations.values():
        defined: _Defined = {}
        for instruction in computation.instructions:
            opcode, text = instruction.opcode, instruction.text
            rule = (_SCHEDULED_RULES if module.is_scheduled else _RULES).get(opcode)
            if rule is not None:
                rule(instruction, defined)
            if opcode in _ACROSS:
                if opcode in MODULE_OPCODES:
                    across.see(instruction, defined)
                if opcode in _SHARING_CALLERS:
                    check_sharding_consistency(instruction, module)
                if threaded and opcode in _THREADED_CALLERS:
                    _check_threads(instruction, threads[computation.name], threads)
            if "sharding=" in text:
                check_sharding_rank(instruction)
            if "origin=" in text:
                check_original_value(instruction)
            if "b(" in instruction.shape_text:
                buffers = True
            defined[instruction.name] = instruction
    across.finish(module)
    return buffers


def _check_threads(instruction: Instruction, thread: str, threads: dict[str, str]) -> None:
    for name in instruction.called_computations:
        called = threads.get(name.lstrip("%"), thread)
        if called != thread:
            _fail(instruction, f"{instruction.opcode} on thread {thread} calls {name} of thread "
                               f"{called}; a called computation runs on its caller's thread",
                  max(instruction.text.find(name, instruction.operands_end), 0))


def _fail(instruction: Instruction, message: str, offset: int) -> None:
    raise instruction.error(f"{message} (XLA's verifier refuses it)", offset)


def _expected_compare_types(element_type: str) -> tuple[str, ...]:
    if element_type.startswith(_FLOATING) or element_type.startswith("c"):
        return ("FLOAT", "TOTALORDER")
    if element_type.startswith("s"):
        return ("SIGNED",)
    return ("UNSIGNED",)  # u*, pred


def _check_compare(instruction: Instruction, defined: _Defined) -> None:
    tail = instruction.text[instruction.operands_end:]
    match = _COMPARE_TYPE.search(tail)
    operands = instruction.operands
    if match is None or len(operands) != 2 or operands[1] not in defined:
        return
    element_type = defined[operands[1]].shape.element_type
    expected = _expected_compare_types(element_type)
    if match.group(1) not in expected:
        _fail(instruction, f"expected comparison type {' or '.join(expected)} for {element_type} "
                           f"operands, not {match.group(1)}",
              instruction.operands_end + match.start(1))


def _same_type(operand: str, result: str, mixed_precision: bool) -> bool:
    """Equal element types; with mixed precision (XLA's allow_mixed_precision), any two floating
    types, as ShapeUtil::SameElementTypeIgnoringFpPrecision compares them."""
    return operand == result or (mixed_precision and operand.startswith(_FLOATING)
                                 and result.startswith(_FLOATING))


def _check_rng(instruction: Instruction, defined: _Defined, mixed_precision: bool = False) -> None:
    element_type, at = instruction.shape.element_type, instruction.operands_start
    for name in instruction.operands:
        operand = defined.get(name)
        if operand is None:
            continue
        shape = operand.shape
        if shape.is_tuple or shape.dimensions:
            _fail(instruction, f"rng's operands must be scalars, not {shape}", at)
        if not _same_type(shape.element_type, element_type, mixed_precision):
            _fail(instruction, f"rng's operand {name} is {shape.element_type}, its result "
                               f"{element_type}: mixed precision is not allowed", at)
    if "rng_normal" in instruction.text and not element_type.startswith(_FLOATING):
        _fail(instruction, f"rng_normal needs a floating point element type, not {element_type}",
              at)


def _check_select(instruction: Instruction, defined: _Defined,
                  mixed_precision: bool = False) -> None:
    element_type, at = instruction.shape.element_type, instruction.operands_start
    for name in instruction.operands[1:]:
        operand = defined.get(name)
        if operand is None:
            continue
        if not operand.shape.is_array:
            _fail(instruction, f"expected array arguments for select, not {operand.shape}", at)
        if not _same_type(operand.shape.element_type, element_type, mixed_precision):
            _fail(instruction, f"select's operand {name} is {operand.shape.element_type}, its "
                               f"result {element_type}: mixed precision is not allowed", at)


def _check_async_operands(instruction: Instruction, defined: _Defined) -> None:
    shape = instruction.shape
    if not (shape.is_tuple and shape.tuple_shapes and shape.tuple_shapes[0].is_tuple):
        return  # opcode_rules.py refuses it
    held = shape.tuple_shapes[0].tuple_shapes
    operands = [defined[name].shape for name in instruction.operands if name in defined]
    if len(held) != len(operands) or any(a.without_layout() != b.without_layout()
                                         for a, b in zip(held, operands, strict=True)):
        _fail(instruction, f"async-start expects the async shape at index {{0}}, "
                           f"{shape.tuple_shapes[0]}, to hold its operands' shapes",
              instruction.operands_start)


def _check_composite(instruction: Instruction, defined: _Defined) -> None:
    if "is_composite" not in instruction.text:
        return
    if instruction.raw_attribute("is_composite") != "true":
        return
    attributes = instruction.frontend_attributes
    at = instruction.operands_end
    if not attributes:
        _fail(instruction, "a composite call op must have frontend attributes", at)
    if not attributes.get("composite.name"):
        _fail(instruction, "a composite call op must have frontend attributes with key "
                           "composite.name whose value is non-empty", at)
    if attributes.get("composite.attributes", "{}") == "":
        _fail(instruction, "a composite call op must have frontend attributes with key "
                           "composite.attributes whose value is default: {} or non-empty", at)
    version = attributes.get("composite.version", "0").strip('"')
    if not version.isdigit():
        _fail(instruction, "a composite call op must have frontend attributes with a "
                           f"composite.version whose value is a non-negative integer, not "
                           f"{version}", at)


def _groups(instruction: Instruction) -> tuple[tuple[int, ...], ...] | None:
    """The replica groups, () for `{}` or none given, None where they cannot be read (the
    attribute's own checks say why)."""
    value = instruction.raw_attribute("replica_groups")
    try:
        return tuple(tuple(g) for g in parse_replica_groups(value)) if value else ()
    except Exception:  # noqa: BLE001  (a malformed value is not this rule's to refuse)
        return None


def _check_global_ids_groups(instruction: Instruction, defined: _Defined) -> None:
    if "use_global_device_ids" not in instruction.text:
        return
    if instruction.raw_attribute("use_global_device_ids") == "true" and _groups(instruction) == ():
        _fail(instruction, "replica groups must be specified in flattened-id mode "
                           "(use_global_device_ids=true)", instruction.operands_end)


def _check_reduce_scatter(instruction: Instruction, defined: _Defined) -> None:
    _check_global_ids_groups(instruction, defined)
    operands = instruction.operands
    dimensions = instruction.dimensions
    if len(operands) != 1 or operands[0] not in defined or not dimensions:
        return
    operand, result, at = defined[operands[0]].shape, instruction.shape, instruction.operands_end
    dimension = dimensions[0]
    if operand.is_tuple or result.is_tuple or len(result.dimensions) != len(operand.dimensions):
        return
    if not 0 <= dimension < len(operand.dimensions):
        _fail(instruction, f"scatter dimension {dimension} is not a dimension of {operand}", at)
    groups = _groups(instruction)
    if not groups:
        return
    sizes = {len(group) for group in groups}
    if len(sizes) > 1:
        _fail(instruction, "replica groups expected to be of uniform size", at)
    size, output = sizes.pop(), result.dimensions[dimension]
    shards = -(-operand.dimensions[dimension] // output) if output else 0
    if size != 1 and shards != size:
        _fail(instruction, f"{operand} scattered along dimension {dimension} into {result} is "
                           f"{shards} shard(s), but the replica groups have {size} members", at)


def _check_scatter_dims(instruction: Instruction, defined: _Defined) -> None:
    operands = instruction.operands
    value = instruction.raw_attribute("scatter_dims_to_operand_dims")
    if not operands or operands[0] not in defined or value is None:
        return
    operand = defined[operands[0]].shape
    rank = len(operand.dimensions)
    for number in re.findall(r"-?\d+", value):
        if not 0 <= int(number) < rank:
            _fail(instruction, f"invalid scatter_dims_to_operand_dims mapping: {number} is not a "
                               f"dimension of the operand {operand}", instruction.operands_end)


def _check_iota(instruction: Instruction, defined: _Defined) -> None:
    shape = instruction.shape
    at = instruction.operands_start
    if not shape.is_array or not shape.dimensions:
        _fail(instruction, f"iota needs an array result of rank 1 or more, not {shape}", at)
    if shape.element_type == "pred":
        _fail(instruction, "iota does not take pred elements", at)
    dimension = instruction.raw_attribute("iota_dimension")
    try:
        number = int(dimension) if dimension is not None else 0
    except ValueError:
        return  # the attribute's own parse refuses it
    if not 0 <= number < len(shape.dimensions):
        _fail(instruction, f"iota_dimension={number} is not a dimension of {shape}", at)


_RULES: dict[str, Callable[[Instruction, _Defined], None]] = {
    "compare": _check_compare, "iota": _check_iota, "rng": _check_rng, "select": _check_select,
    "async-start": _check_async_operands, "call": _check_composite,
    "reduce-scatter": _check_reduce_scatter, "all-reduce": _check_global_ids_groups,
    "all-reduce-start": _check_global_ids_groups, "all-gather": _check_global_ids_groups,
    "all-gather-start": _check_global_ids_groups, "scatter": _check_scatter_dims,
    **COLLECTIVE_RULES, **DOT_RULES,
}
# A scheduled module is a compiler's output, which XLA:TPU and XLA:GPU verify with mixed precision
# allowed (libtpu's fusions select bf16 from f32 operands, benchmarks/tpu_families.py's ResNet).
_SCHEDULED_RULES: dict[str, Callable[[Instruction, _Defined], None]] = {
    **_RULES,
    "rng": functools.partial(_check_rng, mixed_precision=True),
    "select": functools.partial(_check_select, mixed_precision=True),
}
