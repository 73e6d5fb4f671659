"""One pass over a computation's instructions: the checks XLA's parser makes on each.

Names are unique in a computation, parameter numbers too; an operand or control predecessor names
an instruction defined above it (XLA's parser resolves names as it reads, so a later one is "not
defined"); an operand written with its shape (`add(f32[4] %a, ...)`) has that shape; an opcode
gets the number of operands and only the attributes XLA allows it; enum-valued attributes
(`api_version`, `result_accuracy`), `padding=` and `use_global_device_ids` are well-formed; a called
computation exists; a constant's literal fits its shape.

Cheap by construction: attribute keys are found by one regex over the text after the operands, and
only an instruction whose keys need a closer look has its attributes split properly.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from hloscope._native import scan as native
from hloscope.model.instruction import (
    _LAST_WORD_OF_ITEM,
    _PLAIN_OPERANDS,
    CALLED_COMPUTATION_KEYS,
    Instruction,
)
from hloscope.model.module import Computation
from hloscope.model.scan import split_top_level
from hloscope.model.shape_text import TextSyntaxError, parse_shape_prefix
from hloscope.parsers.checks.literals import check_literal
from hloscope.parsers.checks.xla_facts import (
    ACCURACY_MODES,
    API_VERSIONS,
    FIXED_ARITY,
    GENERIC_ATTRIBUTES,
    MIN_ARITY,
    NEEDS_CHANNEL_FOR_GLOBAL_IDS,
    NEWER_ATTRIBUTES,
    OPCODE_ATTRIBUTES,
    TOLERANCE_KEYS,
    UNSPECIFIED_API_VERSION,
)

_KEY_CANDIDATE = re.compile(r",\s*([A-Za-z_][\w.\-]*)\s*=")
_PADDING = re.compile(r"-?\d+_-?\d+(?:_\d+)?(?:x-?\d+_-?\d+(?:_\d+)?)*")
_ACCURACY_MODE = re.compile(r"\{\s*mode\s*=\s*([\w-]+)\s*\}")
_ACCURACY_TOLERANCE = re.compile(r"\{\s*tolerance\s*=\s*\{([^{}]*)\}\s*\}")
_CALLED_KEYS = frozenset(CALLED_COMPUTATION_KEYS)
_CALLED_KEY_AT = re.compile(r"[,\s](?:" + "|".join(CALLED_COMPUTATION_KEYS) + r")\s*=\s*")
# A called value the first step can trust: `%name` or `{%a, %b}` whole, names of [A-Za-z0-9_.-],
# then a `,` or the end (anything else, `᯼left`, `left!` or `%a .10`, goes to the attribute
# split, which decides).
_CALLED_VALUE = re.compile(r"(?:\{\s*(?:%?[A-Za-z0-9_.\-]+\s*(?:,\s*%?[A-Za-z0-9_.\-]+\s*)*)?\}"
                           r"|%?[A-Za-z0-9_.\-]+)(?=\s*(?:,|$))")
_NAME_IN_LIST = re.compile(r"%?([A-Za-z0-9_.\-]+)")
# Tags a memo entry (CALLED_ONLY, opcode, *keys): keys that passed, but for the called
# computations, which _check_called checks each time (the C accelerator's check_run reads it).
CALLED_ONLY = "=called"

# Keys whose value is checked beyond being allowed.
_SPECIAL = frozenset({"control-predecessors", "use_global_device_ids", "api_version",
                      "result_accuracy", "padding", *CALLED_COMPUTATION_KEYS})
# Operand counts an opcode takes: (at least, at most).
_ARITY = {**{op: (count, count) for op, count in FIXED_ARITY.items()},
          **{op: (count, 1 << 30) for op, count in MIN_ARITY.items()}}
_ALLOWED = {op: GENERIC_ATTRIBUTES | NEWER_ATTRIBUTES | set(extra)
            for op, extra in OPCODE_ATTRIBUTES.items()}


def check_computation(computation: Computation, above: Mapping[str, object],
                      memo: set[tuple[str, ...]] | None = None) -> None:
    """Raises a located ParseError at the first instruction XLA's parser would refuse; `above`
    names the computations defined before this one, the only ones it may call. `memo` holds what
    passed already, shared by the module's computations: ("", shape text, literal) of a
    constant, (opcode, attribute keys) of an instruction (both repeat across a module).

    With the C accelerator (hloscope._native), `check_run` passes each run of instructions that
    need no closer look (see _check_instruction) and stops at the first that does, which
    _check_instruction then checks here."""
    memo = set() if memo is None else memo
    defined: dict[str, Instruction] = {}
    parameters: dict[int, Instruction] = {}
    instructions = computation.instructions
    count = len(instructions)
    index = 0
    while index < count:
        if native is not None:
            index = native.check_run(instructions, index, defined, parameters, memo, _ARITY,
                                     above)
            if index >= count:
                break
        _check_instruction(instructions[index], above, memo, defined, parameters)
        index += 1
    _check_parameter_numbers(parameters)


def _check_instruction(instruction: Instruction, above: Mapping[str, object],
                       memo: set[tuple[str, ...]], defined: dict[str, Instruction],
                       parameters: dict[int, Instruction]) -> None:
    name = instruction.name
    if name in defined:
        raise instruction.error(f"instruction {name} is defined twice (first at "
                                f"line {defined[name].line})", _name_offset(instruction))
    opcode, text = instruction.opcode, instruction.text
    start, end = instruction.operands_start, instruction.operands_end
    if opcode == "parameter":
        _check_parameter(instruction, parameters)
    elif opcode == "constant":
        key = ("", instruction.shape_text, text[start:end])  # no opcode is ""
        if key not in memo:
            check_literal(instruction, instruction.shape)
            memo.add(key)
    else:
        operand_text = text[start:end]
        operands = (_LAST_WORD_OF_ITEM.findall(operand_text)
                    if _PLAIN_OPERANDS.fullmatch(operand_text) else instruction.operands)
        for operand in operands:
            if operand not in defined:
                _undefined_operand(instruction, tuple(operands), defined)
        bounds = _ARITY.get(opcode)
        if bounds is not None and not bounds[0] <= len(operands) <= bounds[1]:
            _check_arity(instruction, len(operands))
        if "[" in operand_text:
            _check_operand_shapes(instruction, defined)
    if end + 1 < len(text):
        keys = (opcode, *_KEY_CANDIDATE.findall(text, end))
        if len(keys) > 1 and keys not in memo:
            found = set(keys[1:])
            allowed = found <= _ALLOWED.get(opcode, found)
            if not (allowed and found.isdisjoint(_SPECIAL)):
                _check_attributes(above, instruction, found, defined)
                if allowed and found & _SPECIAL <= _CALLED_KEYS:
                    memo.add((CALLED_ONLY, *keys))  # passes where its callees are above
            else:
                memo.add(keys)
    defined[name] = instruction


def _name_offset(instruction: Instruction) -> int:
    return max(instruction.text.find(instruction.name), 0)


def _check_parameter(instruction: Instruction, parameters: dict[int, Instruction]) -> None:
    number = instruction.parameter_number
    if number in parameters:
        first = parameters[number]
        raise instruction.error(f"duplicate parameter number {number} (also {first.name} at line "
                                f"{first.line})", instruction.operands_start)
    parameters[number] = instruction


def _check_parameter_numbers(parameters: dict[int, Instruction]) -> None:
    """XLA numbers a computation's n parameters 0..n-1 ("invalid parameter number. Expected
    [0, n), got k"; its parser aborts on it): numbers are unique, so one past n-1 is a gap."""
    count = len(parameters)
    for number, instruction in parameters.items():
        if not 0 <= number < count:
            raise instruction.error(f"invalid parameter number {number}: a computation with "
                                    f"{count} parameter(s) numbers them 0..{count - 1}",
                                    instruction.operands_start)


def _undefined_operand(instruction: Instruction, operands: tuple[str, ...],
                       defined: dict[str, Instruction]) -> None:
    name = next(operand for operand in operands if operand not in defined)
    raise instruction.error(_undefined(name), instruction.text.find(name,
                                                                    instruction.operands_start))


def _undefined(name: str) -> str:
    return f"instruction '{name}' is not defined above its use"


def _check_arity(instruction: Instruction, count: int) -> None:
    opcode = instruction.opcode
    expected = FIXED_ARITY.get(opcode)
    if expected is not None and count != expected:
        raise instruction.error(f"{opcode} expects {expected} operands, but has {count} operands",
                                instruction.operands_start - 1)
    minimum = MIN_ARITY.get(opcode)
    if minimum is not None and count < minimum:
        raise instruction.error(f"{opcode} expects at least {minimum} operands, but has {count} "
                                "operands", instruction.operands_start - 1)


def _check_operand_shapes(instruction: Instruction, defined: dict[str, Instruction]) -> None:
    """`op(f32[4] %a)`: the declared shape must be the operand's (layouts aside, as in XLA's
    ShapeUtil::Compatible)."""
    text = instruction.text
    try:
        spans = split_top_level(text, instruction.operands_start, instruction.operands_end)
    except TextSyntaxError as error:
        raise instruction.error(error.message, error.offset) from None
    for start, end in spans:
        if not any(mark in text[start:end] for mark in "[("):
            continue  # a bare name: an operand's name never holds a bracket
        try:
            declared, after = parse_shape_prefix(text[:end], start)
        except TextSyntaxError as error:
            raise instruction.error(error.message, error.offset) from None
        operand = defined.get(text[after:end].strip().lstrip("%"))
        if operand is None:
            continue  # not an operand reference; the operand parse reports it
        if declared.without_layout() != operand.shape.without_layout():
            raise instruction.error(f"the declared operand shape {declared} is not compatible "
                                    f"with the shape of the operand instruction {operand.name}, "
                                    f"{operand.shape}", start + len(text[start:end]) -
                                    len(text[start:end].lstrip()))


def _check_attributes(above: Mapping[str, object], instruction: Instruction, keys: set[str],
                      defined: dict[str, Instruction]) -> None:
    """The attribute checks; a split of the attributes they make is dropped afterwards (as
    validate drops its own), so that checking keeps the loaded module's memory."""
    split_before = instruction._attributes is not None  # noqa: SLF001  (same model)
    try:
        _check_attribute_values(above, instruction, keys, defined)
    finally:
        if not split_before:
            instruction._attributes = None  # noqa: SLF001


def _check_attribute_values(above: Mapping[str, object], instruction: Instruction,
                            keys: set[str], defined: dict[str, Instruction]) -> None:
    allowed = _ALLOWED.get(instruction.opcode)
    if allowed is not None and not keys <= allowed:
        _check_allowed(instruction, allowed)
    if "control-predecessors" in keys:
        for name in instruction.control_predecessors:
            if name not in defined:
                raise instruction.error(_undefined(name),
                                        _value_offset(instruction, "control-predecessors", name))
    if keys & _CALLED_KEYS:
        _check_called(above, instruction)
    if "use_global_device_ids" in keys:
        _check_global_ids(instruction)
    if "api_version" in keys:
        _check_api_version(instruction)
    if "result_accuracy" in keys:
        _check_accuracy(instruction)
    if "padding" in keys and instruction.opcode == "pad":
        _check_padding(instruction)


def _check_allowed(instruction: Instruction, allowed: frozenset[str]) -> None:
    for key in instruction.attribute_names:
        if key not in allowed:
            raise instruction.error(
                f"unexpected attribute '{key}' on {instruction.opcode}; allowed: "
                f"{', '.join(sorted(allowed - NEWER_ATTRIBUTES))}",
                _value_offset(instruction, key) - len(key) - 1)


def _value_offset(instruction: Instruction, key: str, within: str = "") -> int:
    """Where `key`'s value (or `within`, inside it) starts in the instruction's text."""
    span = instruction._attribute_spans().get(key)  # noqa: SLF001  (same model, its locations)
    if span is None:
        return instruction.operands_end
    found = instruction.text.find(within, span[0], span[1]) if within else -1
    return found if found >= 0 else span[0]


def _check_called(computations: Mapping[str, object], instruction: Instruction) -> None:
    """Called computations are defined above: found by a regex first, the attributes split only
    to confirm a name the regex found that is not (it may sit inside a string)."""
    text = instruction.text
    for match in _CALLED_KEY_AT.finditer(text, instruction.operands_end):
        value = _CALLED_VALUE.match(text, match.end())
        if value is None or not all(map(computations.__contains__,
                                        _NAME_IN_LIST.findall(value.group()))):
            break
    else:
        return
    for name in instruction.called_computations:
        if name not in computations:
            offset = instruction.text.find(name, instruction.operands_end)
            raise instruction.error(f"computation {name} is not defined above its use (XLA "
                                    "reads a callee before its callers)", max(offset, 0))


def _check_global_ids(instruction: Instruction) -> None:
    value = instruction.raw_attribute("use_global_device_ids")
    if (instruction.opcode in NEEDS_CHANNEL_FOR_GLOBAL_IDS and value == "true"
            and instruction.raw_attribute("channel_id") is None):
        raise instruction.error("cannot have use_global_device_ids=true without channel_id",
                                _value_offset(instruction, "use_global_device_ids"))


def _check_enum(instruction: Instruction, key: str, values: frozenset[str]) -> None:
    value = instruction.raw_attribute(key)
    if value is not None and value.strip() not in values:
        raise instruction.error(f"invalid {key} '{value.strip()}'; expected one of "
                                f"{', '.join(sorted(values))}", _value_offset(instruction, key))


def _check_api_version(instruction: Instruction) -> None:
    value = (instruction.raw_attribute("api_version") or "").strip()
    if value == UNSPECIFIED_API_VERSION:
        raise instruction.error(
            f"api_version={UNSPECIFIED_API_VERSION} is refused by XLA's parser (older XLAs printed "
            "it: 2023-era PyTorch/XLA and TF-XLA dumps hold it); hint: --lenient (lenient=True) "
            "loads it with a warning", _value_offset(instruction, "api_version"))
    _check_enum(instruction, "api_version", API_VERSIONS)


def _check_accuracy(instruction: Instruction) -> None:
    value = instruction.raw_attribute("result_accuracy")
    if value is None:
        return
    mode = _ACCURACY_MODE.fullmatch(value.strip())
    if mode is not None and mode.group(1) in ACCURACY_MODES:
        return
    tolerance = _ACCURACY_TOLERANCE.fullmatch(value.strip())
    if tolerance is not None and all(
            key.strip() in TOLERANCE_KEYS and number.strip()
            for key, _, number in (item.partition("=") for item in tolerance.group(1).split(","))):
        return
    raise instruction.error("invalid result_accuracy: expected {mode=default|highest} or "
                            "{tolerance={atol=..,rtol=..,ulps=..}}",
                            _value_offset(instruction, "result_accuracy"))


def _check_padding(instruction: Instruction) -> None:
    value = (instruction.raw_attribute("padding") or "").strip()
    if not _PADDING.fullmatch(value):
        raise instruction.error("expects padding config, e.g. '0_0_0x3_3_1' (low_high[_interior] "
                                "per dimension)", _value_offset(instruction, "padding"))
