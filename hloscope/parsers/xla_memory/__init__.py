"""XLA's own memory data: its text dumps, its protos, and the figures they give.

Readers (text, CPU/GPU/TPU variants; malformed input is a ParseError at file:line:col):
`read_buffer_assignment` / `parse_buffer_assignment` (`*-buffer-assignment.txt` and its
`-values.txt`), `read_live_range` / `parse_live_range` (`*-live-range.txt`),
`read_usage_report` / `parse_usage_report` (`*-memory-usage-report.txt`, with `label_tables`).
Protos: `read_hlo_proto` (`*.hlo.pb`), `parse_buffer_assignment_proto`
(memory_analysis().serialized_buffer_assignment_proto), `parse_module_proto`, `with_text_names`.
Figures: `space_allocations` (the allocation per memory space), `memory_analysis_figures`
(memory_analysis() as PjRt computes it), `allocation_profile` / `space_profile` (live bytes over
the schedule from the text dumps), `replay_heap` / `replay_heaps` (XProf's heap replay).
Files: `find_memory_artifacts` (the memory files of one module of a dump folder).
The results are the dataclasses of `hloscope.model.xla_memory`; docs/xla-memory-files.md says
what each file holds per backend.
"""
from __future__ import annotations

from hloscope.parsers.xla_memory.allocation import (
    layout_memory_space,
    memory_analysis_figures,
    space_allocation,
    space_allocations,
)
from hloscope.parsers.xla_memory.artifacts import XlaMemoryArtifacts, find_memory_artifacts
from hloscope.parsers.xla_memory.buffer_assignment import (
    parse_buffer_assignment,
    read_buffer_assignment,
)
from hloscope.parsers.xla_memory.heap_profile import allocation_profile, space_profile
from hloscope.parsers.xla_memory.heap_simulator import (
    indefinite_bytes,
    is_indefinite,
    replay_heap,
    replay_heaps,
    trace_for_color,
)
from hloscope.parsers.xla_memory.hlo_proto import (
    parse_buffer_assignment_proto,
    parse_hlo_proto,
    parse_module_proto,
    read_hlo_proto,
    with_text_names,
)
from hloscope.parsers.xla_memory.live_range import parse_live_range, read_live_range
from hloscope.parsers.xla_memory.usage_report import (
    label_tables,
    parse_usage_report,
    read_usage_report,
)

__all__ = [
    "XlaMemoryArtifacts",
    "allocation_profile",
    "find_memory_artifacts",
    "indefinite_bytes",
    "is_indefinite",
    "label_tables",
    "layout_memory_space",
    "memory_analysis_figures",
    "parse_buffer_assignment",
    "parse_buffer_assignment_proto",
    "parse_hlo_proto",
    "parse_live_range",
    "parse_module_proto",
    "parse_usage_report",
    "read_buffer_assignment",
    "read_hlo_proto",
    "read_live_range",
    "read_usage_report",
    "replay_heap",
    "replay_heaps",
    "space_allocation",
    "space_allocations",
    "space_profile",
    "trace_for_color",
    "with_text_names",
]
