"""Replaying an HloProto's heap-simulator trace the way XProf's memory viewer does.

Facts from xprof/convert/hlo_proto_to_memory_visualization_utils.cc, reimplemented:

- The trace of a memory color: each trace belongs to the allocation of its first event's buffer
  (the trace's own `buffer_allocation_index` is not trusted; on TPU it names pre-combination
  indices). The first allocation of the color that is not indefinite and owns a trace wins;
  otherwise the trace with the most events on buffers of that color.
- Events, in order: ALLOC adds the buffer's LogicalBufferProto size and counts a reference on
  its canonical buffer; FREE drops a reference and removes the canonical buffer's size at the
  last one; SHARE_WITH makes the buffer an alias of its canonical buffer and adds that buffer's
  size only if it was not referenced. The peak is the first event after which the heap is
  largest; the buffers live then, in allocation order, are the live set at the peak.
- Indefinite allocations (entry parameters, maybe-live-out, constants, thread-local) are outside
  the trace; XProf adds their sizes to every point, so its "peak heap" is `HeapReplay.peak_bytes`
  (an allocation whose values are all empty is not counted, as in XProf).

The simulated heap is a *live* sum of temporaries: it ignores the packing the temporary
allocation needed, so its peak is at most that allocation's size. It matches the live profile
rebuilt from the text dumps (`heap_profile.allocation_profile` over the traced values) exactly.
"""
from __future__ import annotations

from collections import Counter

from hloscope.errors import ParseError, SourceLocation
from hloscope.model.xla_memory import (
    ALLOC,
    FREE,
    SHARE_WITH,
    BufferAllocation,
    BufferAssignment,
    HeapReplay,
    HeapTrace,
)


def replay_heaps(assignment: BufferAssignment) -> dict[int, HeapReplay]:
    """A replay for every color of the assignment."""
    return {color: replay_heap(assignment, color) for color in assignment.colors}


def replay_heap(assignment: BufferAssignment, color: int) -> HeapReplay:
    """XProf's memory-viewer figures for `color` (a HeapReplay with no trace when none fits)."""
    trace_index = trace_for_color(assignment, color)
    indefinite = indefinite_bytes(assignment, color)
    if trace_index is None:
        return HeapReplay(color, None, None, 0, indefinite)
    trace = assignment.heap_traces[trace_index]
    owner = _trace_owners(assignment).get(trace_index)
    return _replay(assignment, trace, color, trace_index, owner, indefinite)


def trace_for_color(assignment: BufferAssignment, color: int) -> int | None:
    owners = _trace_owners(assignment)
    by_allocation = {allocation: index for index, allocation in owners.items()}
    for allocation in assignment.allocations:
        if allocation.color == color and not is_indefinite(allocation) \
                and allocation.index in by_allocation:
            return by_allocation[allocation.index]
    return _busiest_trace(assignment, color)


def is_indefinite(allocation: BufferAllocation) -> bool:
    """Live for the whole program in XProf's view (not in any heap-simulator trace)."""
    return (allocation.is_thread_local or allocation.is_entry_computation_parameter
            or allocation.is_constant or allocation.maybe_live_out)


def indefinite_bytes(assignment: BufferAssignment, color: int) -> int:
    return sum(a.size for a in assignment.allocations
               if a.color == color and is_indefinite(a) and any(v.size > 0 for v in a.values))


def _trace_owners(assignment: BufferAssignment) -> dict[int, int]:
    """trace index -> index of the allocation holding its first event's buffer; when several
    traces start in one allocation, the last one keeps it (as in XProf)."""
    allocation_of = {value.id: allocation.index for allocation, value in assignment.values()}
    claimed: dict[int, int] = {}
    for index, trace in enumerate(assignment.heap_traces):
        if trace.events and trace.events[0].buffer_id in allocation_of:
            claimed[allocation_of[trace.events[0].buffer_id]] = index
    return {index: allocation for allocation, index in claimed.items()}


def _busiest_trace(assignment: BufferAssignment, color: int) -> int | None:
    colors = {value.id: allocation.color for allocation, value in assignment.values()}
    best, best_count = None, 0
    for index, trace in enumerate(assignment.heap_traces):
        count = sum(1 for event in trace.events if colors.get(event.buffer_id) == color)
        if count > best_count:
            best, best_count = index, count
    return best


def _replay(assignment: BufferAssignment, trace: HeapTrace, color: int, trace_index: int,
            owner: int | None, indefinite: int) -> HeapReplay:
    sizes = dict(assignment.logical_buffer_sizes) or \
        {value.id: value.size for _, value in assignment.values()}
    heap = _Heap(sizes, assignment.source)
    timeline: list[int] = []
    for position, event in enumerate(trace.events):
        timeline.append(heap.size)
        if event.buffer_id in sizes:
            heap.apply(event.kind, event.buffer_id, event.share_with, position)
    timeline.append(heap.size)
    peak_instruction = trace.events[heap.peak_event].instruction if trace.events else ""
    return HeapReplay(color, trace_index, owner, heap.peak, indefinite, heap.peak_event,
                      peak_instruction, tuple(heap.peak_live), tuple(timeline),
                      tuple(event.instruction for event in trace.events) + ("",))


class _Heap:
    """Reference-counted canonical buffers, as XProf's LogicalBufferStruct."""

    def __init__(self, sizes: dict[int, int], source: str) -> None:
        self.sizes = sizes
        self.source = source
        self.references: Counter[int] = Counter()
        self.canonical: dict[int, int] = {}
        self.live: dict[int, None] = {}  # insertion-ordered set
        self.size = self.peak = self.peak_event = 0
        self.peak_live: list[int] = []

    def root(self, buffer_id: int) -> int:
        while buffer_id in self.canonical:
            buffer_id = self.canonical[buffer_id]
        return buffer_id

    def apply(self, kind: str, buffer_id: int, share_with: int | None, position: int) -> None:
        if kind == ALLOC:
            self.references[self.root(buffer_id)] += 1
            self._grow(buffer_id, position)
        elif kind == FREE:
            self._release(buffer_id)
        elif kind == SHARE_WITH:
            if share_with is None or share_with not in self.sizes:
                return
            self.canonical[buffer_id] = share_with
            root = self.root(share_with)
            self.references[root] += 1
            if self.references[root] == 1:
                self._grow(share_with, position)
        else:
            raise self._error(f"unknown heap-simulator event kind {kind!r}")

    def _grow(self, buffer_id: int, position: int) -> None:
        self.size += self.sizes[buffer_id]
        self.live[buffer_id] = None
        if self.size > self.peak:
            self.peak, self.peak_event, self.peak_live = self.size, position, list(self.live)

    def _release(self, buffer_id: int) -> None:
        root = self.root(buffer_id)
        self.references[root] -= 1
        if self.references[root] < 0:
            raise self._error(f"buffer {buffer_id} is freed more often than allocated")
        if self.references[root] == 0:
            self.size -= self.sizes[root]
            if self.size < 0:
                raise self._error(f"the heap size becomes negative at buffer {buffer_id}")
            self.live.pop(root, None)

    def _error(self, message: str) -> ParseError:
        return ParseError(f"heap-simulator trace: {message}", SourceLocation(self.source, 1, 1))
