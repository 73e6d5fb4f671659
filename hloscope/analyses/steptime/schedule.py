"""Walk a scheduled program in order: compute on one stream, collectives and host copies on links.

The compute stream runs the scheduled sequence one op after another (`ops.py` times each op).
An asynchronous start (`all-gather-start`, `copy-start`, an `async-start` wrapping a collective
or a host transfer, `send`/`recv`) puts its transfer on its link when the stream reaches it, or
when the link is free if it is busy; the matching done makes the stream wait until the transfer
has ended. What the stream waits is the transfer's *exposed* time, charged to the done's phase;
the rest was hidden behind compute. A synchronous collective or a compute op that reads or writes
pinned host memory holds the stream for its transfer: all of it is exposed.

A while loop's body is walked once and counted trip-count times (its condition once more), a
conditional by its slowest branch, a call by its computation, each with its own exposed time.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from hloscope.analyses.cost import Cost, CostAnalysis
from hloscope.analyses.cost.analysis import branch_computations
from hloscope.analyses.cost.collectives import participant_groups
from hloscope.analyses.cost.phases import Phase, phase_of
from hloscope.analyses.memory.host_offload import computation_transfer_bytes, transfer_bytes
from hloscope.analyses.steptime.links import (
    DCN,
    HOST_IN,
    HOST_OUT,
    ICI,
    LinkRates,
    collective_seconds,
    host_seconds,
)
from hloscope.analyses.steptime.ops import (
    Bound,
    ComputeTime,
    OpRates,
    compute_time,
    is_compute,
    is_matmul_kind,
    shape_efficiency,
)
from hloscope.model.instruction import Instruction
from hloscope.model.opcodes import OpCategory, category_of
from hloscope.model.shape_text import TextSyntaxError

BOOKKEEPING = frozenset({"parameter", "constant", "get-tuple-element", "bitcast", "tuple",
                         "after-all", "add-dependency", "opt-barrier", "domain",
                         "partition-id", "replica-id", "async-update"})
_DONE_SUFFIX = "-done"
_MEGASCALE = "_xla_megascale_transfer_type"
LinkOf = Callable[[str, str], str]
"""(computation, instruction) -> ICI or DCN."""
OpMemo = dict[tuple[str, str], tuple[ComputeTime, bool, int, int]]
"""(computation, instruction) -> its compute time, whether a matmul, bytes to / from the host:
what does not change between walks of one program at other link rates."""


def _seconds() -> defaultdict:
    return defaultdict(float)


@dataclass(frozen=True, slots=True)
class OpRecord:
    """One top-level op: what one execution takes and how many times it runs per step."""

    computation: str
    name: str
    opcode: str
    kind: str  # matmul, vector, memory-bound op, collective, host transfer
    phase: str
    executions: int
    seconds: float  # one execution (for a link op: its transfer time)
    bound: str
    flops: int
    bytes_accessed: int

    @property
    def total_seconds(self) -> float:
        return self.seconds * self.executions


@dataclass(slots=True)
class Segment:
    """The walk of one computation run: its span on the compute stream and what it exposed."""

    seconds: float = 0.0
    compute: defaultdict[str, float] = field(default_factory=_seconds)  # bound -> busy
    phase_compute: defaultdict[str, float] = field(default_factory=_seconds)  # phase -> busy
    exposed: defaultdict[tuple[str, str], float] = field(default_factory=_seconds)  # waited
    link_busy: defaultdict[str, float] = field(default_factory=_seconds)
    missing: set[str] = field(default_factory=set)

    def add(self, other: Segment, times: int) -> None:
        self.seconds += other.seconds * times
        for key, value in other.exposed.items():
            self.exposed[key] += value * times
        for mine, theirs in ((self.compute, other.compute), (self.link_busy, other.link_busy),
                             (self.phase_compute, other.phase_compute)):
            for name, seconds in theirs.items():
                mine[name] += seconds * times
        self.missing |= other.missing


@dataclass
class _Clock:
    now: float = 0.0
    link_free: defaultdict[str, float] = field(default_factory=_seconds)
    pending: dict[str, tuple[str, float]] = field(default_factory=dict)


class ScheduleWalk:
    """Times every op of a module's entry, loops multiplied out (see the module docstring)."""

    def __init__(self, analysis: CostAnalysis, ops: OpRates, links: LinkRates,
                 link_of: LinkOf | None = None, memo: OpMemo | None = None) -> None:
        self.analysis = analysis
        self.memo: OpMemo = {} if memo is None else memo
        self.ops = ops
        self.links = links
        self.link_of = link_of or (lambda computation, name: ICI)
        self.records: list[OpRecord] = []
        self._segments: dict[str, Segment] = {}
        self._calls: Counter[tuple[str, str]] = Counter()  # (caller, callee) -> times a run

    def run(self) -> Segment:
        entry = self.analysis.module.entry_name
        segment = self._computation(entry)
        executions = self._executions(entry)
        self.records = [_executed(record, executions.get(record.computation, 0))
                        for record in self.records]
        self.records = [record for record in self.records if record.executions]
        return segment

    def _executions(self, entry: str) -> dict[str, int]:
        """Runs of each computation per step, from the calls the walk counted (a branch that
        is not the slowest runs 0 times in this model)."""
        callers: dict[str, list[tuple[str, int]]] = {}
        for (caller, callee), times in self._calls.items():
            callers.setdefault(callee, []).append((caller, times))
        found: dict[str, int] = {entry: 1}

        def runs(name: str) -> int:
            if name not in found:
                found[name] = 0  # a cycle cannot occur in HLO; guards the recursion anyway
                found[name] = sum(runs(caller) * times
                                  for caller, times in callers.get(name, []))
            return found[name]

        for name in {callee for _, callee in self._calls}:
            runs(name)
        return found

    # --- computations ----------------------------------------------------------------
    def _computation(self, name: str) -> Segment:
        cached = self._segments.get(name)
        if cached is not None:
            return cached
        graph = self.analysis.graph(name)
        costs = self.analysis.computation_costs(name).costs
        clock, segment = _Clock(), Segment()
        cache = _CacheTracker(self.ops.cache_bytes)
        for instruction, cost in zip(graph.computation.instructions, costs, strict=True):
            self._step(name, instruction, cost, clock, segment, cache)
        for link, end in clock.pending.values():  # started, never waited for here
            self._wait(clock, segment, end, link, Phase.OTHER.value)
        segment.seconds = clock.now
        self._segments[name] = segment
        return segment

    def _step(self, computation: str, instruction: Instruction, cost: Cost, clock: _Clock,
              segment: Segment, cache: _CacheTracker) -> None:
        opcode = instruction.opcode
        if opcode in BOOKKEEPING:
            cache.alias(instruction)
            return
        phase = (phase_of(instruction.op_name) or Phase.OTHER).value
        if opcode in ("while", "call", "conditional"):
            self._control(computation, instruction, clock, segment)
        elif opcode.endswith(_DONE_SUFFIX) or opcode in ("async-done",):
            self._done(instruction, clock, segment, phase)
        elif _is_async_start(opcode):
            self._start(computation, instruction, cost, clock, segment, phase)
        elif category_of(opcode) == OpCategory.COLLECTIVE:
            self._sync_collective(computation, instruction, cost, clock, segment, phase)
        elif is_compute(instruction):
            self._compute(computation, instruction, cost, clock, segment, cache, phase)

    def _control(self, computation: str, instruction: Instruction, clock: _Clock,
                 segment: Segment) -> None:
        for callee, times in self._callees(computation, instruction):
            self._calls[(computation, callee)] += times
            inner = self._computation(callee)
            segment.add(inner, times)
            clock.now += inner.seconds * times

    def _callees(self, computation: str, instruction: Instruction) -> list[tuple[str, int]]:
        if instruction.opcode == "while":
            trips = self.analysis.trip_count(computation, instruction).count
            return [(instruction.required_called_computation("body"), trips),
                    (instruction.required_called_computation("condition"), trips + 1)]
        if instruction.opcode == "call":
            return [(instruction.required_called_computation("to_apply"), 1)]
        branches = branch_computations(instruction)
        if not branches:
            return []
        slowest = max(branches, key=lambda name: self._computation(name).seconds)
        return [(slowest, 1)]

    # --- compute -------------------------------------------------------------------
    def _compute(self, computation: str, instruction: Instruction, cost: Cost, clock: _Clock,
                 segment: Segment, cache: _CacheTracker, phase: str) -> None:
        key = (computation, instruction.name)
        if key not in self.memo:
            self.memo[key] = self._op_time(computation, instruction, cost, cache)
        timed, matmul, out, back = self.memo[key]
        seconds, bound, kind = timed.seconds, timed.bound.value, "matmul" if matmul else \
            _vector_kind(timed.bound)
        waits = [(HOST_OUT if out >= back else HOST_IN,
                  host_seconds(self.links, max(out, back)), "host transfer")]
        waits += self._fused_collectives(instruction, segment)
        for link, busy, what in waits:
            # a compute op that moves data on a link itself (a host slice, a TPU collective
            # fusion) runs as long as the longer of its compute and its transfer
            if busy:
                segment.link_busy[link] += busy
            if busy > seconds:
                segment.exposed[(phase, link)] += busy - seconds
                seconds, bound, kind = busy, Bound.LINK.value, what
        segment.compute[timed.bound.value] += timed.seconds
        segment.phase_compute[phase] += timed.seconds
        clock.now += seconds
        cache.produced(instruction)
        self.records.append(OpRecord(computation, instruction.name, instruction.opcode, kind,
                                     phase, 1, seconds, bound, cost.flops,
                                     cost.bytes_accessed))

    def _op_time(self, computation: str, instruction: Instruction, cost: Cost,
                 cache: _CacheTracker) -> tuple[ComputeTime, bool, int, int]:
        matmul = is_matmul_kind(self.analysis.module, computation, instruction, cost)
        efficiency = shape_efficiency(self.analysis, computation, instruction, self.ops.tile) \
            if matmul else 1.0
        cached = cache.cached_read_bytes(computation, instruction, cost, self.analysis)
        timed = compute_time(self.ops, cost, cost.flops if matmul else 0, efficiency, cached)
        out, back = transfer_bytes(self.analysis, computation, instruction)
        return timed, matmul, out, back

    def _fused_collectives(self, instruction: Instruction,
                           segment: Segment) -> list[tuple[str, float, str]]:
        """(link, seconds, kind) of the collectives a fusion runs inside it (libtpu's
        `async_collective_fusion`s: an all-gather fused with the compute that uses it)."""
        fused = instruction.called_computation("calls") if instruction.opcode == "fusion" \
            else None
        if fused is None or fused not in self.analysis.module.computations:
            return []
        costs = self.analysis.computation_costs(fused).costs
        found = []
        for inner, cost in zip(self.analysis.module.computations[fused].instructions, costs,
                               strict=True):
            if category_of(inner.opcode) == OpCategory.COLLECTIVE and cost.collective_bytes:
                link, seconds, kind = self._transfer(fused, inner, cost, segment)
                if link is not None:
                    found.append((link, seconds, "collective fusion"))
        return found

    # --- links ---------------------------------------------------------------------
    def _start(self, computation: str, instruction: Instruction, cost: Cost, clock: _Clock,
               segment: Segment, phase: str) -> None:
        link, seconds, kind = self._transfer(computation, instruction, cost, segment)
        if link is None:  # an async compute op: it runs on the stream
            clock.now += seconds
            segment.phase_compute[phase] += seconds
            return
        begin = max(clock.now, clock.link_free[link])
        end = begin + seconds
        clock.link_free[link] = end
        clock.pending[instruction.name] = (link, end)
        segment.link_busy[link] += seconds
        self.records.append(OpRecord(computation, instruction.name, instruction.opcode, kind,
                                     phase, 1, seconds, Bound.LINK.value, 0,
                                     cost.collective_bytes or cost.bytes_accessed))

    def _done(self, instruction: Instruction, clock: _Clock, segment: Segment,
              phase: str) -> None:
        for operand in instruction.operands:
            waited = clock.pending.pop(operand, None)
            if waited is not None:
                self._wait(clock, segment, waited[1], waited[0], phase)

    @staticmethod
    def _wait(clock: _Clock, segment: Segment, end: float, link: str, phase: str) -> None:
        if end > clock.now:
            segment.exposed[(phase, link)] += end - clock.now
            clock.now = end

    def _sync_collective(self, computation: str, instruction: Instruction, cost: Cost,
                         clock: _Clock, segment: Segment, phase: str) -> None:
        link, seconds, kind = self._transfer(computation, instruction, cost, segment)
        if link is None:
            return
        segment.exposed[(phase, link)] += seconds
        segment.link_busy[link] += seconds
        clock.now += seconds
        self.records.append(OpRecord(computation, instruction.name, instruction.opcode, kind,
                                     phase, 1, seconds, Bound.LINK.value, 0,
                                     cost.collective_bytes))

    def _transfer(self, computation: str, instruction: Instruction, cost: Cost,
                  segment: Segment) -> tuple[str | None, float, str]:
        """(link, seconds, kind) of what a start or a collective moves; link None for an
        asynchronous op that moves nothing (it computes on the stream)."""
        wrapped = _wrapped_opcode(self.analysis, instruction)
        out, back = self._host_bytes(computation, instruction)
        if out or back:
            link = HOST_OUT if out >= back else HOST_IN
            return link, host_seconds(self.links, max(out, back)), "host transfer"
        if category_of(wrapped) == OpCategory.COLLECTIVE or wrapped in ("send", "recv"):
            link = DCN if _MEGASCALE in instruction.text else \
                self.link_of(computation, instruction.name)
            size = self._group_size(instruction)
            seconds = collective_seconds(self.links, wrapped, cost.collective_bytes, size, link)
            if seconds is None:
                segment.missing.add(f"{link} bandwidth")
                return link, 0.0, "collective"
            return link, seconds, "collective"
        timed = compute_time(self.ops, cost, 0, 1.0, 0.0)
        return None, timed.seconds, "async compute"

    def _host_bytes(self, computation: str, instruction: Instruction) -> tuple[int, int]:
        if instruction.opcode != "async-start":
            return transfer_bytes(self.analysis, computation, instruction)
        out = back = 0
        for callee in instruction.called_computations:
            if callee in self.analysis.module.computations:
                more_out, more_back = computation_transfer_bytes(self.analysis, callee)
                out, back = out + more_out, back + more_back
        return out, back

    def _group_size(self, instruction: Instruction) -> int:
        module = self.analysis.module
        target = _wrapped_instruction(self.analysis, instruction)
        try:
            groups = participant_groups(target, module.replica_count, module.num_partitions)
        except TextSyntaxError:
            return module.replica_count * module.num_partitions
        return max((len(group) for group in groups), default=1)


def _executed(record: OpRecord, times: int) -> OpRecord:
    return OpRecord(record.computation, record.name, record.opcode, record.kind, record.phase,
                    times, record.seconds, record.bound, record.flops, record.bytes_accessed)


def _is_async_start(opcode: str) -> bool:
    return opcode.endswith("-start") or opcode in ("async-start", "send", "recv")


def _wrapped_instruction(analysis: CostAnalysis, instruction: Instruction) -> Instruction:
    """The op an `async-start` wraps (the root of its computation); the op itself otherwise."""
    if instruction.opcode != "async-start":
        return instruction
    callee = analysis.module.computations.get(instruction.called_computation("calls") or "")
    return instruction if callee is None or not callee.instructions else callee.root


def _wrapped_opcode(analysis: CostAnalysis, instruction: Instruction) -> str:
    return _wrapped_instruction(analysis, instruction).opcode.removesuffix("-start")


def _vector_kind(bound: Bound) -> str:
    return {Bound.VECTOR: "vector", Bound.OVERHEAD: "small op"}.get(bound, "memory-bound op")


class _CacheTracker:
    """Which buffers a cache (GPU L2) may still hold: the bytes written since each producer."""

    def __init__(self, capacity: int | None) -> None:
        self.capacity = capacity
        self.written = 0
        self.produced_at: dict[str, int] = {}

    def alias(self, instruction: Instruction) -> None:
        """A bitcast or get-tuple-element is its operand's buffer."""
        if self.capacity and instruction.operands:
            source = instruction.operands[0]
            if source in self.produced_at:
                self.produced_at[instruction.name] = self.produced_at[source]

    def produced(self, instruction: Instruction) -> None:
        if not self.capacity:
            return
        self.written += _array_bytes(instruction)
        self.produced_at[instruction.name] = self.written

    def cached_read_bytes(self, computation: str, instruction: Instruction, cost: Cost,
                          analysis: CostAnalysis) -> float:
        """Of the op's reads, the bytes still in the cache: per operand, the part of it the
        bytes written since its producer have not pushed out, in proportion to what the op
        reads of it."""
        if not self.capacity:
            return 0.0
        operands = analysis.graph(computation).operands(instruction)
        sizes = [_array_bytes(operand) for operand in operands]
        total = sum(sizes)
        reads = max(0, cost.bytes_accessed - _array_bytes(instruction))
        if not total or not reads:
            return 0.0
        cached = 0.0
        for operand, size in zip(operands, sizes, strict=True):
            made = self.produced_at.get(operand.name)
            if made is None or not size:
                continue
            resident = max(0.0, min(1.0, (self.capacity - (self.written - made)) / size))
            cached += resident * size / total * reads
        return cached


def _array_bytes(instruction: Instruction) -> int:
    return sum(leaf.byte_size for _, leaf in instruction.shape.leaves() if leaf.is_array)
