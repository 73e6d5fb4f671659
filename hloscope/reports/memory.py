"""The Report of `hloscope memory`: the live peak, what is live at it, and the timeline.

Human formats show the peak, each memory space, XLA's figures beside ours when known, the live
set grouped (by category, scope, layer or phase) and its largest buffers. CSV holds the
timeline (live bytes at each top-level instruction); JSON the whole result.
"""
from __future__ import annotations

from hloscope.analyses.memory.analysis import BufferRow, Group, MemoryResult, TimelineStep
from hloscope.analyses.memory.layer_span import LayerSpan
from hloscope.analyses.memory.story import MemoryStory
from hloscope.reports.paths import with_relative_sources
from hloscope.reports.report import Column, Quantity, Report, Table
from hloscope.units import format_bytes

_GROUP_TITLES = {"category": "category", "scope": "source scope", "layer": "layer",
                 "phase": "phase"}


def memory_report(result: MemoryResult, by: str = "category", top: int | None = 20,
                  timeline_first: bool = False) -> Report:
    """`timeline_first` puts the timeline first (the table CSV writes) and leaves out the rest."""
    tables = [timeline_table(result.timeline)] if timeline_first else [
        *_story_tables(result.story), group_table(result, by),
        live_table(result.live_at_peak, top)]
    return Report(
        name="memory",
        title=f"Memory of {result.module_name}",
        summary=_summary(result),
        tables=tables,
        notes=_notes(result, timeline_first),
        data={**result.to_dict(), "by": by},
    )


def _story_tables(story: MemoryStory) -> list[Table]:
    """The per-space table when the program has a space other than S(0) (a lone S(0)'s figures
    are all in the summary), then the differences when XLA's figures are at hand."""
    tables = []
    if len(story.spaces) > 1 or any(s.memory_space for s in story.spaces):
        tables.append(spaces_table(story))
    if story.differences:
        tables.append(differences_table(story))
    return tables


def _summary(result: MemoryResult) -> list:
    summary: list = [
        ("source", result.source),
        ("backend", result.backend),
    ]
    story = result.story
    apart = [row for row in story.spaces if row.location != "device"]
    if apart:
        summary.append(("device figures count", _device_spaces(story)))
    summary.append(("live peak", Quantity(result.peak_bytes, "bytes")))
    if result.padded_peak_bytes != result.peak_bytes:
        summary.append(("live peak, tile-padded", Quantity(result.padded_peak_bytes, "bytes")))
    if result.estimated_allocation_bytes is not None:
        summary.append(("estimated allocation", Quantity(result.estimated_allocation_bytes,
                                                         "bytes")))
    summary += _xla_lines(result)
    summary += [
        ("peak at", f"{peak_position(result)} ({result.peak_phase})"),
        ("peak op_name", result.peak_op_name or "(none)"),
    ]
    if result.layer_span is not None:
        summary.append(("layer loops", _span_line(result.layer_span)))
    return summary + [("buffers", Quantity(result.buffer_count, "int"))]


def _span_line(span: LayerSpan) -> str:
    """Where the peak is against the span of the layer loops, which saved activations live
    through."""
    loops = f"{span.first_loop} .. {span.last_loop}: at most {format_bytes(span.peak_bytes)}"
    if span.headroom_bytes <= 0:
        where = f"{loops}; the peak is inside them"
    else:
        where = (f"{loops}; the peak is outside them, {format_bytes(span.headroom_bytes)} "
                 f"above: saved activations up to that much more fit under it")
    if span.deferred_bytes <= 0:
        return where
    return (f"{where}; {format_bytes(span.deferred_bytes)} made between them is held through "
            f"the last for later")


def _device_spaces(story: MemoryStory) -> str:
    device = [r.label for r in story.spaces
              if r.location == "device" and r.memory_space is not None]
    apart = [r.label for r in story.spaces if r.location != "device"]
    return f"{', '.join(device)} ({', '.join(apart)} apart)"


def _xla_lines(result: MemoryResult) -> list:
    """XLA's figures, each named for what it is: the buffer assignment's allocation,
    memory_analysis() (or why it is not at hand), and the live-range dump's chosen moment."""
    xla = result.xla
    if xla is None:
        return []
    lines: list = []
    if xla.allocation_bytes is not None:
        lines.append(("XLA allocation (buffer assignment)",
                      Quantity(xla.allocation_bytes, "bytes")))
    analysis = xla.memory_analysis_bytes
    if analysis is None:
        lines.append(("memory_analysis()", xla.memory_analysis_note.split(" (")[0]))
    else:
        whose = " (libtpu's, HBM only)" if result.backend == "tpu" else ""
        lines.append(("memory_analysis()", f"{format_bytes(analysis)}{whose}"))
    if xla.live_peak_bytes is not None:
        spaces = "each value counted" if all(
            s.location == "device" for s in result.story.spaces) else "all spaces, each value"
        lines.append(("XLA live-range dump", f"{format_bytes(xla.live_peak_bytes)} at "
                      f"t={xla.live_peak_time}: a moment XLA picks ({spaces}), not a peak"))
    return lines


def spaces_table(story: MemoryStory) -> Table:
    """Each memory space's figures, device spaces first; XLA's columns when its data is at
    hand."""
    columns = [Column("label", "memory space"), Column("location", "location"),
               Column("live_peak_bytes", "live peak", "bytes"),
               Column("estimated_allocation_bytes", "estimated allocation", "bytes")]
    if any(row.xla_allocation_bytes is not None for row in story.spaces):
        columns.append(Column("xla_allocation_bytes", "XLA allocation", "bytes"))
    if any(row.memory_analysis_bytes is not None for row in story.spaces):
        columns.append(Column("memory_analysis_bytes", "memory_analysis()", "bytes"))
    return Table("memory_spaces", "Per memory space", columns,
                 [row.to_dict() for row in story.spaces])


def differences_table(story: MemoryStory) -> Table:
    columns = [Column("label", "difference"), Column("bytes", "bytes", "int"),
               Column("share", "share", "int"), Column("reason", "why", below=True)]
    rows = [{**d.to_dict(), "bytes": f"{d.bytes:+,}",
             "share": "" if d.share is None else f"{d.share:+.2%}"} for d in story.differences]
    return Table("differences", "Differences between device figures", columns, rows)


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


def peak_position(result: MemoryResult) -> str:
    """Where the peak is on the one time axis every report and chart uses: XLA's schedule
    position t (the live-range time, a loop's body numbered before the loop). A peak inside a
    loop or call also names the top-level step that encloses it, the row the timeline tables
    and the chart's x axis show."""
    where = f"t={result.peak_time} {result.peak_instruction}"
    step = enclosing_step(result.timeline, result.peak_time)
    if step is None or step.time == result.peak_time:
        return where
    return f"{where}, inside {step.instruction} (t={step.time})"


def enclosing_step(steps: list[TimelineStep], time: int) -> TimelineStep | None:
    """The top-level step running at schedule position `time` (the first at or after it)."""
    return next((step for step in steps if step.time >= time), None)


def live_table(rows: list[BufferRow], top: int | None) -> Table:
    shown = rows if top is None else rows[:top]
    columns = [Column("name", "buffer"), Column("bytes", "bytes", "bytes")]
    if _padded_differs(rows):
        columns.append(Column("padded_bytes", "padded", "bytes"))
    columns += [Column("shape", "shape")]
    if any(r.memory_space for r in rows):
        columns.append(Column("memory_space", "S(n)", "int"))
    columns += [Column("category", "category"), Column("phase", "phase"),
                Column("layer", "layer"), Column("op_name", "op_name", drop=1),
                Column("source", "source", drop=1)]
    if any(r.sharding for r in shown):
        columns.append(Column("sharding", "sharding", drop=1))
    table_rows = with_relative_sources([_live_row(row) for row in shown])
    if len(rows) > len(shown):
        rest = rows[len(shown):]
        table_rows.append({"name": f"({len(rest)} more)", "bytes": sum(r.bytes for r in rest),
                           "padded_bytes": sum(r.padded_bytes for r in rest)})
    return Table("live_at_peak", "Buffers live at the peak, largest first", columns, table_rows,
                 detail=True)


def _live_row(row: BufferRow) -> dict:
    """An argument is shown by its pytree path (`params['layers']['w1']`), not `param.3`."""
    data = row.to_dict()
    if row.argument:
        data["name"] = row.argument
    return data


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
    if result.xla is None and result.xla_moment_bytes != result.all_spaces_peak_bytes:
        notes.append(f"XLA's live-range dump would name t={result.xla_moment_time} its peak "
                     f"({result.xla_moment_bytes:,} bytes, all spaces): the moment where the "
                     "bytes live just before plus those made then are highest, each value "
                     "counted on its own (no sharing); not the highest point")
    notes += result.story.notes
    untested = [row.label for row in result.story.spaces if row.location != "device"
                and row.estimated_allocation_bytes is not None]
    if untested:
        notes.append(f"the estimated allocation of {', '.join(untested)} is not checked "
                     "against XLA's by any test (they compare device memory)")
    if result.scope_prefix:
        notes.append(f"scopes are shown below {result.scope_prefix}/ (shared by every op), "
                     f"to depth {result.scope_depth}; arguments by their pytree path")
    if not timeline_first:
        notes.append(f"the timeline ({len(result.timeline)} top-level steps) is in "
                     "--format csv and json, and --plot draws it")
    return notes
