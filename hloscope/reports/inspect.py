"""The Report of `hloscope inspect`."""
from __future__ import annotations

from hloscope.analyses.summary.inspect import BufferSummary, InspectResult
from hloscope.reports.report import Column, Quantity, Report, Table

_BUFFER_COLUMNS = [
    Column("name", "name"),
    Column("index", "index"),
    Column("shape", "shape"),
    Column("bytes", "bytes", "bytes"),
    Column("padded_bytes", "padded", "bytes"),
]


def inspect_report(result: InspectResult, top: int | None = None) -> Report:
    """The report; with `top`, each table shows its N largest rows and one "(N more)" row that
    sums the rest (a model has hundreds of parameter and output leaves)."""
    return Report(
        name="inspect",
        title=f"Module {result.module_name}",
        summary=_summary(result),
        tables=[_op_table(result, top), _category_table(result),
                _buffer_table("parameters", "Entry parameters", result.parameters, top),
                _buffer_table("outputs", "Outputs", result.outputs, top)],
        notes=_notes(result),
        data=result.to_dict(),
    )


def _summary(result: InspectResult) -> list:
    return [
        ("source", result.source),
        ("scheduled", result.is_scheduled),
        ("entry computation", result.entry_computation),
        ("computations", result.computation_count),
        ("instructions", result.instruction_count),
        ("partitions x replicas", f"{result.num_partitions} x {result.replica_count}"),
        ("parameter bytes", Quantity(result.parameter_bytes, "bytes")),
        ("output bytes", Quantity(result.output_bytes, "bytes")),
        *_cost_summary(result),
        *_peak_summary(result),
    ]


def _peak_summary(result: InspectResult) -> list:
    if result.costs is None:
        return []
    if result.peak_bytes is None:
        return [("live peak (device)", result.peak_note)]
    return [("live peak (device, from the HLO text)", Quantity(result.peak_bytes, "bytes"))]


def _cost_summary(result: InspectResult) -> list:
    costs = result.costs
    if costs is None:
        return []
    overhead = costs.recompute_flops / costs.forward_flops if costs.forward_flops else 0.0
    return [
        ("FLOPs (per device)", Quantity(costs.total_flops, "flops")),
        ("transcendentals", costs.total_transcendentals),
        ("bytes accessed", Quantity(costs.total_bytes_accessed, "bytes")),
        ("recomputed instructions (jax / XLA pass)",
         f"{costs.remat_instructions} / {costs.xla_remat_instructions}"),
        ("recompute FLOPs", Quantity(costs.recompute_flops, "flops")),
        ("recompute overhead", Quantity(overhead, "percent")),
    ]


def _op_table(result: InspectResult, top: int | None) -> Table:
    table = _count_table("op_counts", "opcode", result.op_counts, result.instruction_count)
    rows = sorted(table.rows, key=lambda r: -r["count"])
    if top is not None and len(rows) > top:
        rest = rows[top:]
        count = sum(r["count"] for r in rest)
        table.rows = [*rows[:top], {"opcode": f"({len(rest)} more)", "count": count,
                                    "share": count / max(result.instruction_count, 1)}]
    return table


def _category_table(result: InspectResult) -> Table:
    return _count_table("categories", "category", result.category_counts,
                        result.instruction_count)


def _count_table(name: str, key: str, counts: dict[str, int], total: int) -> Table:
    rows = [{key: k, "count": n, "share": n / max(total, 1)} for k, n in counts.items()]
    return Table(name, f"Instructions by {key}",
                 [Column(key, key), Column("count", "count", "int"),
                  Column("share", "share", "percent")], rows)


def _buffer_table(name: str, title: str, buffers: list[BufferSummary],
                  top: int | None = None) -> Table:
    """Parameters are named by their pytree path when JAX wrote one (`params['w1']`, not
    `param.3`), with their sharding when any has one; past `top`, the largest are shown and
    the rest summed in one row."""
    columns = list(_BUFFER_COLUMNS)
    if any(b.sharding for b in buffers):
        columns.append(Column("sharding", "sharding", drop=1))
    if top is not None and len(buffers) > top:
        title = f"{title}: the {top} largest of {len(buffers)}"
        buffers = sorted(buffers, key=lambda b: -b.bytes)
    rows = [{"name": b.path or b.name, "index": b.index, "shape": b.shape, "bytes": b.bytes,
             "padded_bytes": b.padded_bytes, "sharding": b.sharding} for b in buffers[:top]]
    rest = buffers[len(rows):]
    if rest:
        rows.append({"name": f"({len(rest)} more)", "bytes": sum(b.bytes for b in rest),
                     "padded_bytes": sum(b.padded_bytes for b in rest)})
    return Table(name, title, columns, rows)


def _notes(result: InspectResult) -> list[str]:
    notes = []
    if result.unknown_opcodes:
        notes.append("opcodes unknown to hloscope, kept as generic instructions: "
                     + ", ".join(result.unknown_opcodes))
    if result.other_modules:
        shown = ", ".join(result.other_modules[:10])
        more = len(result.other_modules) - 10
        chosen = f"read {result.module_name}: {result.chosen_because}; " \
            if result.chosen_because else ""
        notes.append(f"{chosen}other modules in this input (pick one with --module): {shown}"
                     + (f" and {more} more" if more > 0 else ""))
    if not result.is_scheduled:
        notes.append("the module is not scheduled (is_scheduled=true is absent): it is HLO before "
                     "optimization, so memory analyses need the after-optimizations dump")
    return notes
