"""Bytes a program moves between device memory and pinned host memory (`S(5)`), per step.

Host offload (e.g. `save_and_offload_only_these_names(offload_dst="pinned_host")`) shows up in
optimized HLO as data movement whose source and destination sit in different memory spaces. Each
transfer counts the bytes it moves, not the size of the buffers it touches:

- `dynamic-update-slice` into a host buffer from a device update moves the update (operand 1) to
  the host; one into a device buffer from a host update moves the update back;
- `dynamic-slice` of a host buffer into device memory moves the slice (its result) back from the
  host; the reverse moves the slice to the host;
- `copy-start` returns (destination, source, context) and `copy` its destination: between
  spaces, the copied shape moves;
- a fusion moves what the instructions it fuses move (their fused parameters carry the memory
  spaces of its operands); any other instruction whose result lives in S(5) moved its non-host
  array operands there, and one whose result is in device memory read its host operands back
  in full.

Asynchronous forms, as TPU dumps print them (`%dynamic-slice-start = ((host buffer, indices...),
slice, context) async-start(...), calls=%async_computation` and its `async-done`), move nothing
themselves: the wrapped computation's op, which runs once per start, is counted. Counting the
start's tuple instead charged the whole stacked [L, ...] host buffer to every iteration.
Instructions that only pass buffers along (tuples, get-tuple-element, bitcasts, copy-done,
loops, calls and async wrappers themselves) move nothing. Loop bodies count once per iteration
(trip counts from hloscope.analyses.cost; an unknown trip count counts once and is reported).
Sizes are unpadded (`Shape.byte_size`). Space 5 is the host on every backend (xla/layout.h
kHostMemorySpace).

XLA's `memory_analysis().host_temp_size_in_bytes` is the size of the host allocations (the
stacked buffers), not traffic: a scan that offloads one [b, s, h] carry per layer allocates L of
them once and moves each once each way, so the allocation equals the traffic only by
coincidence of this pattern; comparing the two proves nothing about the count.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass

from hloscope.analyses.cost import CostAnalysis
from hloscope.devices import HOST_MEMORY_SPACE
from hloscope.model.instruction import Instruction
from hloscope.model.module import HloModule
from hloscope.model.shape import Shape

PASS_THROUGH = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast",
                          "copy-done", "while", "call", "conditional", "async-start",
                          "async-done", "async-update", "opt-barrier", "after-all"})
SLICING = frozenset({"dynamic-update-slice", "dynamic-slice", "copy"})


@dataclass(frozen=True, slots=True)
class HostTransfers:
    to_host_bytes: int = 0
    from_host_bytes: int = 0
    instructions: int = 0
    unknown_loops: int = 0

    @property
    def total_bytes(self) -> int:
        return self.to_host_bytes + self.from_host_bytes

    def to_dict(self) -> dict[str, int]:
        return {**asdict(self), "total_bytes": self.total_bytes}


def host_transfers(module_or_analysis: HloModule | CostAnalysis) -> HostTransfers:
    """Bytes moved to and from pinned host memory by one run of the module's entry."""
    analysis = module_or_analysis if isinstance(module_or_analysis, CostAnalysis) else \
        CostAnalysis(module_or_analysis)
    to_host = from_host = moving = 0
    for computation, instruction, times in _executed(analysis):
        out, back = transfer_bytes(analysis, computation, instruction)
        if out or back:
            moving += 1
            to_host += out * times
            from_host += back * times
    unknown = sum(1 for trip in analysis.trip_counts().values() if not trip.known)
    return HostTransfers(to_host, from_host, moving, unknown)


def _executed(analysis: CostAnalysis) -> Iterator[tuple[str, Instruction, int]]:
    """(computation, instruction, executions) for every non-fused instruction that runs."""
    pending = [(analysis.module.entry_name, 1)]
    while pending:
        name, times = pending.pop()
        for instruction in analysis.module.computations[name].instructions:
            yield name, instruction, times
            pending.extend(_callees(analysis, name, instruction, times))


def _callees(analysis: CostAnalysis, name: str, instruction: Instruction,
             times: int) -> list[tuple[str, int]]:
    opcode = instruction.opcode
    if opcode == "while":
        trips = analysis.trip_count(name, instruction).count
        return [(instruction.called_computation("body") or "", times * trips),
                (instruction.called_computation("condition") or "", times * (trips + 1))]
    if opcode in ("call", "conditional", "async-start"):
        return [(callee, times) for callee in instruction.called_computations
                if callee in analysis.module.computations]
    return []


def transfer_bytes(analysis: CostAnalysis, computation: str,
              instruction: Instruction) -> tuple[int, int]:
    """(bytes to the host, bytes back from it) one execution of `instruction` moves."""
    if instruction.opcode in PASS_THROUGH:
        return 0, 0
    shape = instruction.shape
    if instruction.opcode == "copy-start" and shape.is_tuple and len(shape.tuple_shapes) >= 2:
        destination, source = shape.tuple_shapes[0], shape.tuple_shapes[1]
        return _between(source, destination, source.byte_size)
    fused = instruction.called_computation("calls") if instruction.opcode == "fusion" else None
    if fused in analysis.module.computations:
        return computation_transfer_bytes(analysis, fused)
    operands = analysis.graph(computation).operand_shapes(instruction)
    if not _on_host(shape) and not any(_on_host(s) for s in operands):
        return 0, 0
    if instruction.opcode in SLICING:
        return _sliced(instruction.opcode, shape, operands)
    if _on_host(shape):
        return sum(s.byte_size for s in operands if not _on_host(s) and s.rank), 0
    return 0, sum(s.byte_size for s in operands if _on_host(s))


def _sliced(opcode: str, result: Shape, operands: list[Shape]) -> tuple[int, int]:
    """A dynamic-update-slice moves its update, a dynamic-slice its slice, a copy its shape."""
    if opcode == "dynamic-update-slice":
        return _between(operands[1], result, operands[1].byte_size)
    return _between(operands[0], result, result.byte_size)


def computation_transfer_bytes(analysis: CostAnalysis, fused: str) -> tuple[int, int]:
    """What a computation moves, as its instructions do: a fusion's (a TPU fusion whose root
    updates a host buffer; a GPU one that slices a host buffer and copies the slice out), or an
    async start's wrapped computation."""
    to_host = from_host = 0
    for inner in analysis.module.computations[fused].instructions:
        out, back = transfer_bytes(analysis, fused, inner)
        to_host, from_host = to_host + out, from_host + back
    return to_host, from_host


def _between(source: Shape, destination: Shape, size: int) -> tuple[int, int]:
    if _on_host(destination) and not _on_host(source):
        return size, 0
    if _on_host(source) and not _on_host(destination):
        return 0, size
    return 0, 0


def _on_host(shape: Shape) -> bool:
    """True when every array leaf of `shape` lives in host memory."""
    leaves = [leaf for _, leaf in shape.leaves() if leaf.is_array]
    return bool(leaves) and all(leaf.memory_space == HOST_MEMORY_SPACE for leaf in leaves)
