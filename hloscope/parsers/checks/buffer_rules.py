"""Buffer shapes, `b(...)`, as XLA's verifier checks them (xla/service/hlo_verifier.cc:
VerifyBuffers, VerifyCustomCall, VerifyPin, VerifyUnpin, VerifyCreateBuffer, CountWriters).

Buffers live only where a custom-call aliases them: an entry parameter holds none, and no
instruction but a custom-call, while, parameter, tuple or get-tuple-element (or an async op, or a
call with a stream annotation) takes or makes one. A Pin custom-call turns its one array operand
into a buffer of its shape, an Unpin its one buffer operand back into the array, a CreateBuffer
makes one from nothing; each declares one output-to-operand aliasing. Any other custom-call
names each buffer among its operands and each among its results in exactly one aliasing pair. A
buffer has at most one writer: a custom-call, call, fusion, while or conditional that takes it,
a while body's root that returns it, or one of those reached through tuples and
get-tuple-elements. In an async computation only the root custom-call is checked.
The pass runs only on modules that hold a buffer shape. Each failure is a ParseError (exit 4) at
the instruction.
"""
from __future__ import annotations

import re
from collections import Counter

from hloscope.model.instruction import Instruction
from hloscope.model.module import Computation, HloModule
from hloscope.parsers.checks.collective_rules import fail

Index = tuple[int, ...]
_ALIASING = re.compile(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{([\d,\s]*)\}")
_WRITERS = frozenset({"call", "custom-call", "fusion", "async-start", "async-update",
                      "async-done", "while", "conditional"})
_ASYNC = frozenset({"async-start", "async-update", "async-done"})
_STREAM_ANNOTATION = "_xla_stream_annotation"
_CONTEXT_FREE = frozenset({"custom-call", "while", "parameter", "get-tuple-element", "tuple"})


def _close(text: str, i: int, opening: str, closing: str) -> int:
    depth = 0
    while i < len(text):
        depth += (text[i] == opening) - (text[i] == closing)
        if depth == 0:
            return i + 1
        i += 1
    return i


def buffer_leaves(shape_text: str) -> frozenset[Index]:
    """The shape indices of the `b(...)` leaves of a shape's text."""
    found: set[Index] = set()
    index: list[int] = []
    i = 0
    while i < len(shape_text):
        char = shape_text[i]
        if shape_text.startswith("b(", i) and (i == 0 or not shape_text[i - 1].isalnum()):
            found.add(tuple(index))
            i = _close(shape_text, i + 1, "(", ")")
            continue
        if char in "[{":
            i = _close(shape_text, i, char, "]" if char == "[" else "}")
            continue
        if char == "(":
            index.append(0)
        elif char == ")" and index:
            index.pop()
        elif char == "," and index:
            index[-1] += 1
        i += 1
    return frozenset(found)


def _index(text: str) -> Index:
    return tuple(int(n) for n in text.replace(" ", "").split(",") if n)


def _aliasing(instruction: Instruction) -> list[tuple[Index, tuple[int, Index]]]:
    raw = instruction.raw_attribute("output_to_operand_aliasing") or ""
    return [(_index(m.group(1)), (int(m.group(2)), _index(m.group(3))))
            for m in _ALIASING.finditer(raw)]


class _Scope:
    """One computation's buffers and users, and what the module says about it."""

    def __init__(self, computation: Computation, while_computations: set[str]) -> None:
        self.computation = computation
        self.buffers: dict[str, frozenset[Index]] = {}
        self.by_name = {i.name: i for i in computation.instructions}
        self.users: dict[str, list[Instruction]] = {}
        for instruction in computation.instructions:
            self.buffers[instruction.name] = _shape_buffers(instruction, self.buffers)
            for name in dict.fromkeys(instruction.operands):
                self.users.setdefault(name, []).append(instruction)
        self.root = computation.root if computation.instructions else None
        self.in_while = computation.name in while_computations

    def writers(self, instruction: Instruction, index: Index) -> int:
        return sum(self._writers_in(instruction, index, user)
                   for user in self.users.get(instruction.name, ()))

    def _writers_in(self, instruction: Instruction, index: Index, user: Instruction) -> int:
        if user.opcode in _WRITERS:
            return 1
        if user.opcode == "get-tuple-element" and index and user.tuple_index == index[0]:
            return self.writers(user, index[1:])
        if user.opcode == "tuple":
            if user is self.root:
                return int(self.in_while)
            return self.writers(user, (user.operands.index(instruction.name), *index))
        return 0

    def check_unique_writer(self, instruction: Instruction, index: Index) -> None:
        if self.writers(instruction, index) > 1:
            fail(instruction, "an HLO buffer value has more than one writers (or unpins): "
                              f"{instruction.name} at {{{','.join(map(str, index))}}}",
                 instruction.operands_start)

    def operand_buffers(self, instruction: Instruction) -> list[frozenset[Index]]:
        return [self.buffers.get(name, frozenset()) for name in instruction.operands]


def _shape_buffers(instruction: Instruction, buffers: dict[str, frozenset[Index]]
                   ) -> frozenset[Index]:
    if instruction.shape_text:
        return buffer_leaves(instruction.shape_text) if "b(" in instruction.shape_text \
            else frozenset()
    operands = [buffers.get(name, frozenset()) for name in instruction.operands]
    if instruction.opcode == "get-tuple-element" and operands:
        number = instruction.tuple_index
        return frozenset(i[1:] for i in operands[0] if i and i[0] == number)
    if instruction.opcode == "tuple":
        return frozenset((n, *i) for n, leaves in enumerate(operands) for i in leaves)
    return frozenset()


def _check_pin(scope: _Scope, instruction: Instruction, target: str) -> None:
    at, operands = instruction.operands_start, scope.operand_buffers(instruction)
    result = scope.buffers[instruction.name]
    operand = scope.by_name.get(instruction.operands[0]) if instruction.operands else None
    if target == "Pin":
        if len(operands) != 1 or operands[0] or operand is None or not operand.shape.is_array:
            fail(instruction, "custom-call to Pin must have one array non-buffer operand", at)
        if () not in result:
            fail(instruction, "custom-call to Pin must have one buffer result", at)
    else:
        if len(operands) != 1 or () not in operands[0] or operand is None:
            fail(instruction, "custom-call to Unpin must have one buffer operand", at)
        if result or not instruction.shape.is_array:
            fail(instruction, "custom-call to Unpin must have one array non-buffer result", at)
    if operand.shape.without_layout() != instruction.shape.without_layout():
        fail(instruction, f"custom-call to {target} must have the same shape as the operand", at)
    if len(_aliasing(instruction)) != 1:
        fail(instruction, f"custom-call to {target} must have one output-to-operand aliasing", at)
    if target == "Pin":
        scope.check_unique_writer(instruction, ())


def _check_custom_call(scope: _Scope, instruction: Instruction) -> None:
    target = (instruction.custom_call_target or "").strip('"')
    if target in ("Pin", "Unpin"):
        _check_pin(scope, instruction, target)
        return
    at = instruction.operands_start
    result = scope.buffers[instruction.name]
    if target == "CreateBuffer":
        if instruction.operands:
            fail(instruction, "custom-call to CreateBuffer can't have an operand", at)
        if () not in result:
            fail(instruction, "custom-call to CreateBuffer must have one buffer result", at)
        scope.check_unique_writer(instruction, ())
        return
    pairs = _aliasing(instruction)
    operand_parts = Counter(operand for _, operand in pairs)
    for number, leaves in enumerate(scope.operand_buffers(instruction)):
        for index in sorted(leaves):
            count = operand_parts[(number, index)]
            if count != 1:
                problem = "used in results multiple times" if count else \
                    "used in operands but not in results"
                fail(instruction, f"buffer is {problem}: operand {number} ShapeIndex "
                                  f"{{{','.join(map(str, index))}}}", at)
    result_parts = Counter(output for output, _ in pairs)
    for index in sorted(result):
        count = result_parts[index]
        if count != 1:
            problem = "used in operands multiple times" if count else \
                "used in results but not in operands"
            fail(instruction, f"buffer is {problem}: {{{','.join(map(str, index))}}}", at)
    for index in sorted(result):
        scope.check_unique_writer(instruction, index)


def _check_no_buffers(scope: _Scope, instruction: Instruction) -> None:
    if scope.buffers[instruction.name] or any(scope.operand_buffers(instruction)):
        fail(instruction, "Seen buffers while buffers aren't allowed in this context",
             instruction.operands_start)


def _check_instruction(scope: _Scope, instruction: Instruction, entry: bool) -> None:
    opcode = instruction.opcode
    if opcode in _ASYNC or (opcode == "call"
                            and _STREAM_ANNOTATION in instruction.frontend_attributes):
        return
    if opcode == "custom-call":
        _check_custom_call(scope, instruction)
    elif (opcode == "parameter" and entry) or opcode not in _CONTEXT_FREE:
        _check_no_buffers(scope, instruction)
    if opcode in ("while", "parameter"):
        for index in sorted(scope.buffers[instruction.name]):
            scope.check_unique_writer(instruction, index)


def check_buffers(module: HloModule) -> None:
    """Raises a located ParseError at the first misuse of a buffer (run it only on modules that
    hold a `b(...)` shape: `check_verifier_rules` says which)."""
    async_computations: set[str] = set()
    while_computations: set[str] = set()
    for _, instruction in module.instructions():
        if instruction.opcode == "async-start":
            async_computations.update(n.lstrip("%") for n in instruction.called_computations)
        elif instruction.opcode == "while":
            while_computations.update(n.lstrip("%") for n in instruction.called_computations)
    for computation in module.computations.values():
        scope = _Scope(computation, while_computations)
        if computation.name in async_computations:
            if scope.root is not None and scope.root.opcode == "custom-call":
                _check_custom_call(scope, scope.root)
            continue
        for instruction in computation.instructions:
            _check_instruction(scope, instruction, computation.is_entry)
