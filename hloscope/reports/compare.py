"""The report of `hloscope compare`: the figures side by side, then what explains them."""
from __future__ import annotations

from typing import Any

from hloscope.analyses.gate.compare import CompareResult, KeyDelta, MetricDelta, PeakPlace
from hloscope.reports.report import Column, Quantity, Report, Table

_METRIC_COLUMNS = [Column("metric", "metric"), Column("a", "A"), Column("b", "B"),
                   Column("delta", "B - A"), Column("relative", "relative", "percent")]
_KEY_COLUMNS = [Column("a", "A", "int"), Column("b", "B", "int"), Column("delta", "B - A", "int")]
_FLOP_COLUMNS = [Column("a", "A", "flops"), Column("b", "B", "flops"),
                 Column("delta", "B - A", "flops")]
_BUFFER_COLUMNS = [Column("change", "change"), Column("shape", "shape"),
                   Column("category", "category"), Column("count_a", "A", "int"),
                   Column("count_b", "B", "int"), Column("bytes_a", "bytes A", "bytes"),
                   Column("bytes_b", "bytes B", "bytes"), Column("delta", "B - A", "bytes"),
                   Column("op_name", "op_name")]


def compare_report(result: CompareResult, top: int | None = None) -> Report:
    tables = [Table("metrics", "Figures per device (B - A)", _METRIC_COLUMNS,
                    [_metric_row(m) for m in result.metrics]),
              _key_table("opcodes", "Instructions by opcode that differ", "opcode",
                         _KEY_COLUMNS, result.opcodes, top)]
    for by, rows in result.flops_by.items():
        tables.append(_key_table(f"flops_by_{by}", f"FLOPs by {by} that differ", by,
                                 _FLOP_COLUMNS, rows, top))
    tables.append(Table("buffers", "Buffers live at the peak that appear, disappear or change "
                        "(matched by op_name and shape)", _BUFFER_COLUMNS,
                        [c.to_dict() for c in result.buffers[:top]], detail=True))
    return Report(name="compare", title=f"Compare A: {result.a}  B: {result.b}",
                  summary=_summary(result), tables=tables, notes=_notes(result, top),
                  data=result.to_dict())


def _metric_row(metric: MetricDelta) -> dict[str, Any]:
    kind = metric.kind
    return {"metric": metric.label, "a": _shown(metric.a, kind), "b": _shown(metric.b, kind),
            "delta": _shown(metric.delta, kind), "relative": metric.relative}


def _shown(value: int | float | None, kind: str) -> Quantity | str:
    return "n/a" if value is None else Quantity(value, kind)  # type: ignore[arg-type]


def _key_table(name: str, title: str, key: str, columns: list[Column], rows: list[KeyDelta],
               top: int | None) -> Table:
    return Table(name, title, [Column("key", key), *columns],
                 [d.to_dict() for d in rows[:top]])


def _summary(result: CompareResult) -> list:
    summary: list = [("differences", "yes" if result.differs else "none"),  # the verdict first
                     ("A", result.a), ("B", result.b)]
    if result.peak_a is not None and result.peak_b is not None:
        summary += [("peak of A", _place(result.peak_a)), ("peak of B", _place(result.peak_b))]
    return summary


def _place(place: PeakPlace) -> str:
    return f"{place.phase}: {place.op_name or place.instruction} ({place.instruction})"


def _notes(result: CompareResult, top: int | None) -> list[str]:
    notes = list(result.notes)
    a, b = result.peak_a, result.peak_b
    if a is not None and b is not None and result.peak_moved:
        where = "phase" if a.phase != b.phase else "operation"
        notes.append(f"the peak moved to another {where}: from {_place(a)} to {_place(b)}")
    hidden = len(result.buffers) - len(result.buffers[:top])
    if hidden > 0:
        notes.append(f"{hidden} more buffer changes not shown (--top)")
    return notes
