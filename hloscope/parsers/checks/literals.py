"""A constant's literal against its shape: nesting, element counts, and each value's range.

XLA's parser refuses `f32[2,2] constant({1,2,3,4})` ("expects nested array in rank 2"), a row of
the wrong length, `u8[] constant(-1)` and `f16[] constant(1e10)` (out of the type's range; u64
takes -1, as XLA reads an int64 modulo 2^64), a NaN payload the type cannot hold
(`bf16[] constant(nan(0x3ff))`, any payload on f8e4m3fn), a complex part out of its float's range,
and a token that is not a number (`0x10`, `1.5` for an integer type). One scan over the literal's
text; tuples, complex numbers' nesting and elided literals (`{...}`) are not checked.
"""
from __future__ import annotations

import math
import re

from hloscope.model.instruction import Instruction
from hloscope.model.shape import Shape
from hloscope.parsers.checks.xla_facts import FLOAT_MAX, integer_range

_TOKEN = re.compile(r"\s*(?:([{}])|(,)|([^\s{},]+))")
_INTEGER = re.compile(r"[-+]?\d+")
_FLOAT = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)")
_FLOAT_WORD = re.compile(r"[-+]?(?:inf|nan(?:\(0x[0-9a-fA-F]+\))?)")
_UNCHECKED_TYPES = ("c64", "c128", "token", "opaque")
_NAN_PAYLOAD = re.compile(r"[-+]?nan\(0x([0-9a-fA-F]+)\)")
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
# The largest finite value of a complex type's parts (XLA checks each part's range).
_COMPLEX_PART_MAX = {"c64": FLOAT_MAX["f32"][0], "c128": FLOAT_MAX["f64"][0]}
# NaN payload bits of the types with signaling NaNs (XLA's NanPayloadBits: digits - 1); types
# with one NaN (the fn, fnuz and e8m0fnu formats) take no payload. Others are not checked.
_NAN_PAYLOAD_BITS = {"f16": 10, "bf16": 7, "f32": 23, "f64": 52, "f8e4m3fn": 0,
                     "f8e4m3fnuz": 0, "f8e4m3b11fnuz": 0, "f8e5m2fnuz": 0, "f8e8m0fnu": 0}
_QUIET_NAN_OF_DOUBLE = 1 << 51  # the payload XLA reads for a bare `nan`


def check_literal(instruction: Instruction, shape: Shape) -> None:
    """Raises a located ParseError where the literal disagrees with `shape`."""
    start, end = instruction.operands_start, instruction.operands_end
    text = instruction.text
    if shape.is_tuple or "..." in text[start:end]:
        return
    if shape.element_type in _COMPLEX_PART_MAX:
        _check_complex_parts(instruction, shape.element_type)
    if shape.element_type in _UNCHECKED_TYPES:
        return
    _Walker(instruction, shape).walk(start, end)


def _check_complex_parts(instruction: Instruction, element_type: str) -> None:
    largest = _COMPLEX_PART_MAX[element_type]
    text = instruction.text
    for match in _NUMBER.finditer(text, instruction.operands_start, instruction.operands_end):
        if abs(float(match.group())) > largest:
            raise instruction.error(f"constant: part {match.group()} is out of range for "
                                    f"{element_type} namely [-{largest:g}, {largest:g}]",
                                    match.start())


def _nan_payload_problem(word: str, element_type: str) -> str:
    match = _NAN_PAYLOAD.fullmatch(word)
    bits = _NAN_PAYLOAD_BITS.get(element_type)
    if match is None or bits is None:
        return ""
    payload = int(match.group(1), 16)
    if bits == 0 and payload != _QUIET_NAN_OF_DOUBLE:
        return (f"tries to set NaN payload 0x{payload:x}, but {element_type} does not support "
                "payloads")
    if bits and payload > (1 << bits) - 1:
        return (f"tries to set NaN payload 0x{payload:x}, but the NaN payload is out of range "
                f"(0x{(1 << bits) - 1:x}) for {element_type}")
    return ""


class _Walker:
    """Walks `{ {a, b}, {c, d} }` keeping, per open brace, how many elements it has seen."""

    def __init__(self, instruction: Instruction, shape: Shape) -> None:
        self.instruction = instruction
        self.shape = shape
        self.value = _value_check(shape.element_type)

    def walk(self, start: int, end: int) -> None:
        dims, dynamic = self.shape.dimensions, self.shape.dynamic_dimensions
        counts: list[int] = []
        error = self.instruction.error
        position = start
        while position < end:
            match = _TOKEN.match(self.instruction.text, position, end)
            if match is None:
                break
            position = match.end()
            brace, word = match.group(1), match.group(3)
            offset = match.start(1) if brace else match.start(3)
            if brace == "{":
                if len(counts) >= len(dims):
                    raise error(f"constant: expects nested array in rank {len(dims)}, but sees "
                                "larger", offset)
                if counts:
                    counts[-1] += 1
                counts.append(0)
            elif brace == "}":
                if not counts:
                    raise error("constant: unbalanced '}' in the literal", offset)
                level = len(counts) - 1
                if counts[-1] != dims[level] and not (level < len(dynamic) and dynamic[level]):
                    raise error(f"constant: expects {dims[level]} elements in dimension {level}, "
                                f"but sees {counts[-1]}", offset)
                counts.pop()
            elif word is not None:
                if counts and len(counts) < len(dims):
                    raise error(f"constant: expects nested array in rank {len(dims)}, but sees "
                                f"{len(counts)}", offset)
                if counts:
                    counts[-1] += 1
                problem = self.value(word)
                if problem:
                    raise error(f"constant: {problem}", offset)


def _value_check(element_type: str):  # noqa: ANN202  (a small closure factory)
    bounds = integer_range(element_type)
    if bounds is not None:
        low, high = bounds
        if element_type == "u64":
            low = -(1 << 63)  # XLA reads an int64 and takes it modulo 2^64 (-1 is 2^64-1)

        def integer(word: str) -> str:
            if not _INTEGER.fullmatch(word):
                return f"expects an integer for {element_type}, got '{word}'"
            value = int(word)
            if not low <= value <= high:
                return (f"value {word} is out of range for {element_type} "
                        f"namely [{low}, {high}]")
            return ""

        return integer
    if element_type in FLOAT_MAX:
        largest, mantissa_bits = FLOAT_MAX[element_type]
        limit = largest + math.ldexp(1.0, math.frexp(largest)[1] - 2 - mantissa_bits)

        def floating(word: str) -> str:
            if _FLOAT_WORD.fullmatch(word):
                return _nan_payload_problem(word, element_type)
            if not _FLOAT.fullmatch(word):
                return f"expects a number for {element_type}, got '{word}'"
            if abs(float(word)) >= limit:
                return f"value {word} is out of range for {element_type} namely [-{largest:g}, " \
                       f"{largest:g}]"
            return ""

        return floating
    return lambda word: ""  # pred takes true/false and integers alike
