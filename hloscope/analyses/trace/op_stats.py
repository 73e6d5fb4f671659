"""Self time per HLO op, per program and per category over the whole capture (xprof's hlo_stats).

Every op event of every program counts, on every core, joined to HLO or not: an op is one
(program, op name) pair, its self time the sum of its events' self times (`join`: a `while` or
`call` less its body's events; any other op its duration, on the device clock where libtpu
gives it). These are the figures of xprof's `hlo_stats` and `op_profile` tools on the same
capture (the wild-trace tests compare them).

**Category**, as xprof shows it: the `hlo_category` stat libtpu writes on each op (`loop
fusion`, `convolution fusion`, `copy-done`, `all-reduce`, ...); where the writer gives none
(XLA:CPU, XLA:GPU) the joined instruction's, by XLA's `HloInstruction::ToCategory` rules as
far as the text shows them: transpose, copy and reshape are `data formatting`, a fusion is
`<kind> fusion` (`convolution fusion` when it computes a dot or convolution), an elementwise
op `non-fusion elementwise`, any other its opcode.

**Group**, the coarse view the categories fall into: `matmul/convolution`, `fusion`,
`collective`, `host transfer` (a copy-start / copy-done, or any op, that moves an array to or
from host memory, memory space S(5)), `data movement`, `other`.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from hloscope.analyses.trace.join import Join, JoinedEvent
from hloscope.devices import HOST_MEMORY_SPACE
from hloscope.model.instruction import Instruction
from hloscope.model.opcodes import OpCategory, category_of
from hloscope.model.trace import PS_PER_US

T = TypeVar("T")
MATMUL, FUSION, COLLECTIVE, HOST_TRANSFER, DATA_MOVEMENT, OTHER = (
    "matmul/convolution", "fusion", "collective", "host transfer", "data movement", "other")
_FUSION_KINDS = {"kLoop": "loop fusion", "kInput": "input fusion", "kOutput": "output fusion",
                 "kCustom": "custom fusion"}
_DATA_FORMATTING = frozenset({"transpose", "copy", "reshape"})
_CONVOLUTION_CATEGORIES = ("convolution", "dot")
_COLLECTIVE_WORDS = ("all-reduce", "all-gather", "all-to-all", "reduce-scatter",
                     "collective", "send", "recv")
_DATA_WORDS = ("data formatting", "copy", "broadcast", "slice", "pad", "concatenate",
               "gather", "scatter", "iota", "transpose", "reshape", "bitcast")


@dataclass(frozen=True, slots=True)
class OpStat:
    """One HLO op of one program over the whole capture (an hlo_stats row)."""

    module: str
    program_id: int | None
    op: str
    category: str
    group: str
    occurrences: int
    self_us: float
    share: float
    joined: bool


@dataclass(frozen=True, slots=True)
class CategoryRow:
    category: str
    group: str
    ops: int
    occurrences: int
    self_us: float
    share: float


@dataclass(frozen=True, slots=True)
class ProgramTotal:
    module: str
    program_id: int | None
    ops: int
    occurrences: int
    self_us: float
    share: float


@dataclass(frozen=True, slots=True)
class OpStats:
    total_us: float
    ops: list[OpStat]
    programs: list[ProgramTotal]
    categories: list[CategoryRow]


def op_stats(joined: Join) -> OpStats:
    """The capture's op self time by op, program and category (see the module docstring)."""
    by_op: dict[tuple[str, int | None, str], list[JoinedEvent]] = defaultdict(list)
    for event in joined.events:
        by_op[(event.event.module, event.event.program_id, event.event.name)].append(event)
    total_ps = sum(e.self_ps for e in joined.events)
    ops = sorted((_op_stat(key, group, total_ps) for key, group in by_op.items()),
                 key=lambda r: (-r.self_us, r.module, r.op))
    return OpStats(total_ps / PS_PER_US, ops, _programs(ops), _categories(ops))


def _op_stat(key: tuple[str, int | None, str], group: list[JoinedEvent],
             total_ps: int) -> OpStat:
    module, program, name = key
    first = next((e for e in group if e.instruction is not None), group[0])
    category = op_category(first.event.category, first.instruction, first)
    self_ps = sum(e.self_ps for e in group)
    return OpStat(module, program, name, category, op_group(category, first), len(group),
                  self_ps / PS_PER_US, self_ps / total_ps if total_ps else 0.0,
                  first.instruction is not None)


def op_category(written: str, instruction: Instruction | None, joined: JoinedEvent) -> str:
    """The writer's category, else the instruction's (see the module docstring)."""
    if written:
        return written
    if instruction is None:
        return "unknown"
    opcode = instruction.opcode
    if opcode in _DATA_FORMATTING:
        return "data formatting"
    if opcode == "fusion":
        if _computes_matmul(instruction, joined):
            return "convolution fusion"
        return _FUSION_KINDS.get(instruction.fusion_kind or "", "fusion")
    if category_of(opcode) is OpCategory.ELEMENTWISE:
        return "non-fusion elementwise"
    return opcode


def _computes_matmul(instruction: Instruction, joined: JoinedEvent) -> bool:
    if joined.program is None:
        return False
    module = joined.program.module
    pending, seen = list(instruction.called_computations), set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        for inner in module.computation(name).instructions:
            if category_of(inner.opcode) is OpCategory.MATMUL:
                return True
            pending.extend(inner.called_computations)
    return False


def op_group(category: str, joined: JoinedEvent) -> str:
    """The coarse group of a category (see the module docstring)."""
    if _touches_host(joined):
        return HOST_TRANSFER
    if category.startswith(_CONVOLUTION_CATEGORIES) or category == "convolution fusion":
        return MATMUL
    if category.endswith("fusion"):
        return FUSION
    if category.startswith(_COLLECTIVE_WORDS):
        return COLLECTIVE
    if category.startswith(_DATA_WORDS):
        return DATA_MOVEMENT
    return OTHER


def _touches_host(joined: JoinedEvent) -> bool:
    """Whether the op's result or an operand has an array in host memory (S(5))."""
    instruction, program = joined.instruction, joined.program
    if instruction is None or program is None:
        return False
    by_name = {i.name: i for i in program.module.computation(joined.computation).instructions}
    shapes = [instruction.shape] + [by_name[name].shape for name in instruction.operands
                                    if name in by_name]
    return any(leaf.is_array and leaf.memory_space == HOST_MEMORY_SPACE
               for shape in shapes for _, leaf in shape.leaves())


def _programs(ops: list[OpStat]) -> list[ProgramTotal]:
    return _totals(ops, lambda op: (op.module, op.program_id), ProgramTotal)


def _categories(ops: list[OpStat]) -> list[CategoryRow]:
    return _totals(ops, lambda op: (op.category, op.group), CategoryRow)


def _totals(ops: list[OpStat], key: Callable[[OpStat], tuple], row: Callable[..., T]) -> list[T]:
    """`row(*key, ops, occurrences, self µs, share)` per key of `ops`, largest first."""
    grouped: dict[tuple, list[OpStat]] = defaultdict(list)
    for op in ops:
        grouped[key(op)].append(op)
    rows = [(sum(o.self_us for o in members),
             row(*name, len(members), sum(o.occurrences for o in members),
                 sum(o.self_us for o in members), sum(o.share for o in members)))
            for name, members in grouped.items()]
    return [made for _, made in sorted(rows, key=lambda pair: -pair[0])]
