"""Live ranges: the closed interval of times each value occupies memory (XLA's HloLiveRange).

- A value starts when its instruction runs; a parameter's at the start of its computation.
- It lives to its last position: a computation root holds it to the end of that computation.
  Values made inside an async computation live until its async-done.
- It lives to its last use; a while's use of its initial value ends when the body starts, and a
  call's use of an operand when the callee starts (the callee's own uses count).
- An entry parameter that no output aliases lives for the whole program.
- Values sharing one buffer (`aliasing.py`) get disjoint ranges: sorted by (start, end, id),
  each range ends where the next begins, and the next inherits the longer end.
"""
from __future__ import annotations

from collections import defaultdict

from hloscope.analyses.memory.liveness.aliasing import UnionFind
from hloscope.analyses.memory.liveness.program import FlatProgram
from hloscope.analyses.memory.liveness.values import Value


def live_ranges(program: FlatProgram, values: list[Value],
                buffers: UnionFind) -> dict[int, tuple[int, int]]:
    """value id -> (start, end), both inclusive, for every value a flattened instruction defines."""
    readonly = _readonly_parameters(program)
    ranges: dict[int, tuple[int, int]] = {}
    for value in values:
        if value.instruction in program.time:
            ranges[value.id] = _range(program, value, readonly)
    _normalize(ranges, values, buffers)
    return ranges


def _range(program: FlatProgram, value: Value, readonly: set) -> tuple[int, int]:
    instruction = value.instruction
    time = program.time[instruction]
    computation = program.computation_of[instruction]
    span = program.spans[computation.name]
    start = span.start if instruction.opcode == "parameter" else time
    end = span.end if program.is_root(instruction) else time
    done = program.async_context.get(computation.name)
    if done is not None and done in program.time:
        end = max(end, program.time[done])
    end = max(end, _last_position(program, value))
    if instruction.opcode == "parameter" and (instruction, value.index) in readonly:
        return start, program.end_time
    return start, max(end, _last_use(program, value))


def _last_position(program: FlatProgram, value: Value) -> int:
    end = -1
    for instruction, _ in value.positions[1:]:
        if program.is_root(instruction):
            span = program.spans.get(program.computation_of[instruction].name)
            time = span.end if span else -1
        else:
            time = program.time.get(instruction, -1)
        end = max(end, time)
    return end


def _last_use(program: FlatProgram, value: Value) -> int:
    end = -1
    for user, operand_number, _ in value.uses:
        used = _moved_use(program, user, operand_number)
        end = max(end, program.time.get(used, -1))
    return end


def _moved_use(program: FlatProgram, user, operand_number: int):
    """A while's use of its init moves to its body's parameter; a call's to its callee's."""
    if user.opcode == "while":
        body = user.called_computation("body")
        parameter = program.parameter(body, 0) if body else None
        return parameter or user
    if user.opcode == "call" and user.called_computations:
        parameter = program.parameter(user.called_computations[0], operand_number)
        return parameter or user
    return user


def _readonly_parameters(program: FlatProgram) -> set:
    """(entry parameter, index) pairs that no output aliases: they live the whole program."""
    aliased = set()
    if program.root is program.module.entry:
        aliased = {(number, index) for _, number, index, _ in program.module.input_output_alias}
    readonly = set()
    for parameter in program.root.instructions:
        if parameter.opcode != "parameter":
            continue
        for index, _ in _all_indices(parameter.shape):
            if (parameter.parameter_number, index) not in aliased:
                readonly.add((parameter, index))
    return readonly


def _all_indices(shape, prefix=()):
    yield prefix, shape
    if shape.is_tuple:
        for i, sub in enumerate(shape.tuple_shapes):
            yield from _all_indices(sub, (*prefix, i))


def _normalize(ranges: dict[int, tuple[int, int]], values: list[Value],
               buffers: UnionFind) -> None:
    """XLA's NormalizeAliasedBuffers: disjoint ranges within each buffer."""
    members: dict[int, list[int]] = defaultdict(list)
    for value in values:
        if value.id in ranges:
            members[buffers.find(value.id)].append(value.id)
    for ids in members.values():
        if len(ids) < 2:
            continue
        ids.sort(key=lambda i: (*ranges[i], i))
        for first, second in zip(ids, ids[1:], strict=False):
            start1, end1 = ranges[first]
            start2, end2 = ranges[second]
            ranges[second] = (start2, max(end1, end2))
            ranges[first] = (start1, min(end1, start2))
