"""The Report of `hloscope memory`: the live peak, what is live at it, and the timeline.

Human formats show the peak, each memory space, XLA's figures beside ours when known, the live
set grouped (by category, scope, layer or phase) and its largest buffers. CSV holds the
timeline (live bytes at each top-level instruction); JSON the whole result.
"""
from __future__ import annotations

from hloscope.analyses.memory.analysis import BufferRow, Group, MemoryResult, TimelineStep
from hloscope.reports.report import Column, Quantity, Report, Table
from hloscope.units import format_bytes

_GROUP_TITLES = {"category": "category", "scope": "source scope", "layer": "layer",
                 "phase": "phase"}


def memory_report(result: MemoryResult, by: str = "category", top: int | None = 20,
                  timeline_first: bool = False) -> Report:
    """`timeline_first` puts the timeline first (the table CSV writes) and leaves out the rest."""
    tables = [timeline_table(result.timeline)] if timeline_first else [
        group_table(result, by), live_table(result.live_at_peak, top)]
    return Report(
        name="memory",
        title=f"Memory of {result.module_name}",
        summary=_summary(result),
        tables=tables,
        notes=_notes(result, timeline_first),
        data={**result.to_dict(), "by": by},
    )


def _summary(result: MemoryResult) -> list:
    summary: list = [
        ("source", result.source),
        ("backend", result.backend),
        ("live peak", Quantity(result.peak_bytes, "bytes")),
    ]
    if result.padded_peak_bytes != result.peak_bytes:
        summary.append(("live peak, tile-padded", Quantity(result.padded_peak_bytes, "bytes")))
    if result.estimated_allocation_bytes is not None:
        summary.append(("estimated allocation", Quantity(result.estimated_allocation_bytes,
                                                         "bytes")))
    summary += [
        ("peak at", f"t={result.peak_time} {result.peak_instruction} ({result.peak_phase})"),
        ("peak op_name", result.peak_op_name or "(none)"),
    ]
    summary += _space_lines(result)
    summary += _xla_lines(result)
    summary.append(("buffers", Quantity(result.buffer_count, "int")))
    return summary


def _space_lines(result: MemoryResult) -> list:
    if len(result.spaces) < 2 and all(s.memory_space == 0 for s in result.spaces):
        return []
    return _spaces_shown(result)


def _spaces_shown(result: MemoryResult) -> list:
    allocated = result.xla.allocation_by_space if result.xla else {}
    lines: list = []
    for space in result.spaces:
        label = f"S({space.memory_space}) {space.name} ({space.location})"
        value: object = Quantity(space.peak_bytes, "bytes")
        estimated = space.estimated_allocation_bytes
        if estimated is not None:
            value = f"{format_bytes(space.peak_bytes)} live, estimated {format_bytes(estimated)}"
        if space.memory_space in allocated:
            value = (f"{value if estimated is not None else format_bytes(space.peak_bytes)}"
                     f"{' live' if estimated is None else ''}, XLA allocates "
                     f"{format_bytes(allocated[space.memory_space])}")
        lines.append((label, value))
    if result.all_spaces_peak_bytes != result.peak_bytes:
        lines.append(("all spaces at once", Quantity(result.all_spaces_peak_bytes, "bytes")))
    return lines


def _xla_lines(result: MemoryResult) -> list:
    xla = result.xla
    if xla is None:
        return []
    lines = []
    if xla.live_peak_bytes is not None:
        lines.append(("XLA live-range peak", f"{format_bytes(xla.live_peak_bytes)} at "
                      f"t={xla.live_peak_time}"))
        mixed = result.all_spaces_peak_bytes != result.peak_bytes
        label = "  all-spaces live peak - XLA's" if mixed else "  live peak - XLA's"
        lines.append((label, _difference(result.all_spaces_peak_bytes, xla.live_peak_bytes)))
        lines.append(("  ours at XLA's moment - XLA's",
                      _difference(result.xla_moment_bytes, xla.live_peak_bytes)))
    if xla.allocation_bytes is not None:
        lines.append(("XLA allocation (device)", Quantity(xla.allocation_bytes, "bytes")))
        lines.append(("  live peak - allocation",
                      _difference(result.peak_bytes, xla.allocation_bytes)))
        if result.estimated_allocation_bytes is not None:
            lines.append(("  estimated - allocation",
                          _difference(result.estimated_allocation_bytes, xla.allocation_bytes)))
    return lines


def _difference(ours: int, theirs: int) -> str:
    delta = ours - theirs
    share = f" ({delta / theirs:+.2%})" if theirs else ""
    return f"{delta:+,} bytes{share}"


def group_table(result: MemoryResult, by: str) -> Table:
    title = _GROUP_TITLES.get(by, by)
    columns = [Column("key", title), Column("bytes", "bytes", "bytes"),
               Column("share", "share", "percent"), Column("buffers", "buffers", "int")]
    if _padded_differs(result.live_at_peak):
        columns.insert(2, Column("padded_bytes", "padded", "bytes"))
    rows = [_group_row(g, result.peak_bytes) for g in result.groups(by)]
    return Table(f"by_{by}", f"Live at the peak, by {title}", columns, rows)


def _group_row(group: Group, total: int) -> dict:
    return {**group.to_dict(), "share": group.bytes / total if total else 0.0}


def live_table(rows: list[BufferRow], top: int | None) -> Table:
    shown = rows if top is None else rows[:top]
    columns = [Column("name", "buffer"), Column("bytes", "bytes", "bytes")]
    if _padded_differs(rows):
        columns.append(Column("padded_bytes", "padded", "bytes"))
    columns += [Column("shape", "shape")]
    if any(r.memory_space for r in rows):
        columns.append(Column("memory_space", "S(n)", "int"))
    columns += [Column("category", "category"), Column("phase", "phase"),
                Column("layer", "layer"), Column("op_name", "op_name"),
                Column("source", "source")]
    table_rows = [row.to_dict() for row in shown]
    if len(rows) > len(shown):
        rest = rows[len(shown):]
        table_rows.append({"name": f"({len(rest)} more)", "bytes": sum(r.bytes for r in rest),
                           "padded_bytes": sum(r.padded_bytes for r in rest)})
    return Table("live_at_peak", "Buffers live at the peak, largest first", columns, table_rows)


def timeline_table(steps: list[TimelineStep]) -> Table:
    columns = [Column("step", "step", "int"), Column("time", "time", "int"),
               Column("instruction", "instruction"), Column("opcode", "opcode"),
               Column("phase", "phase"), Column("live_bytes", "live bytes", "bytes"),
               Column("inner_peak_bytes", "inner peak", "bytes")]
    return Table("timeline", "Live bytes at each top-level instruction", columns,
                 [step.to_dict() for step in steps])


def _padded_differs(rows: list[BufferRow]) -> bool:
    return any(r.padded_bytes != r.bytes for r in rows)


def _notes(result: MemoryResult, timeline_first: bool) -> list[str]:
    notes = [f"{result.basis}."]
    if result.xla is None or result.xla.allocation_bytes is None:
        notes.append("XLA's allocation (what decides an OOM) is estimated from the HLO text "
                     "(XLA's buffer assigner and heap simulator replayed on the live ranges; "
                     "within 2% on the tested CPU and GPU programs): pass the XLA dump folder "
                     "to see XLA's own beside it")
    if result.xla_moment_bytes != result.all_spaces_peak_bytes:
        notes.append(f"XLA's live-range dump reports its peak at t={result.xla_moment_time} "
                     f"({result.xla_moment_bytes:,} bytes, all spaces): it picks the moment "
                     "where the bytes live just before plus those made then are highest, and "
                     "counts no buffer reuse, so its figure is not the highest point")
    if result.scope_prefix:
        notes.append(f"scopes are shown below {result.scope_prefix}/ (shared by every op), "
                     f"to depth {result.scope_depth}; arguments by their pytree path")
    if not timeline_first:
        notes.append(f"the timeline ({len(result.timeline)} top-level steps) is in "
                     "--format csv and json, and --plot draws it")
    return notes
