"""The Report of `hloscope flops`: totals, one breakdown table, and what could not be counted."""
from __future__ import annotations

from hloscope.analyses.cost.flops import FlopsResult, Row
from hloscope.reports.report import Column, Quantity, Report, Table

_TITLES = {"opcode": "opcode", "scope": "source scope", "layer": "layer", "phase": "phase"}


def flops_report(result: FlopsResult, by: str = "phase", top: int | None = None) -> Report:
    return Report(
        name="flops",
        title=f"FLOPs of {result.module_name}",
        summary=_summary(result),
        tables=[breakdown_table(result.rows(by), by, result.total.flops, top)],
        notes=_notes(result, by),
        data={**result.to_dict(), "by": by},
    )


def _summary(result: FlopsResult) -> list:
    total = result.total
    summary = [
        ("source", result.source),
        ("FLOPs", Quantity(total.flops, "flops")),
        ("transcendentals", Quantity(total.transcendentals, "int")),
        ("bytes accessed", Quantity(total.bytes_accessed, "bytes")),
    ]
    if total.collective_bytes:
        summary.append(("collective bytes", Quantity(total.collective_bytes, "bytes")))
    if result.loops:
        summary.append(("loops", ", ".join(f"{loop.instruction} x{loop.trip_count}"
                                           for loop in result.loops)))
    summary.append(("loop trip counts applied", result.trip_counts_applied))
    return summary


def breakdown_table(rows: list[Row], by: str, total_flops: int, top: int | None) -> Table:
    """The rows of one breakdown; past `top`, the rest are summed into one row."""
    shown = rows if top is None or len(rows) <= top else rows[:top] + [_rest(rows[top:])]
    columns = [Column("key", _TITLES.get(by, by)), Column("flops", "FLOPs", "flops"),
               Column("share", "share", "percent"),
               Column("transcendentals", "transcendentals", "int"),
               Column("bytes_accessed", "bytes accessed", "bytes")]
    if any(r.collective_bytes for r in rows):
        columns.append(Column("collective_bytes", "collective bytes", "bytes"))
    columns.append(Column("instructions", "instructions", "int"))
    if by == "layer":
        columns += [Column("iterations", "iterations", "int"),
                    Column("flops_per_iteration", "FLOPs per iteration", "flops")]
    return Table(f"by_{by}", f"By {_TITLES.get(by, by)}", columns,
                 [{**row.to_dict(), "share": row.flops / total_flops if total_flops else 0.0}
                  for row in shown])


def _rest(rows: list[Row]) -> Row:
    rest = Row(f"({len(rows)} more)")
    for row in rows:
        rest.flops += row.flops
        rest.transcendentals += row.transcendentals
        rest.bytes_accessed += row.bytes_accessed
        rest.collective_bytes += row.collective_bytes
        rest.instructions += row.instructions
    return rest


def closed_form_notes(result: FlopsResult) -> list[str]:
    """What the closed-form custom-calls rest on (XLA counts them as nothing)."""
    if not result.closed_form:
        return []
    calls = ", ".join(f"{c.kernel} x{c.count} ({c.matmuls_per_block_pair} matmuls on "
                      f"{c.visited_block_pairs}/{c.block_pairs} block pairs)"
                      for c in result.closed_form)
    bases = sorted({c.basis for c in result.closed_form})
    return [f"closed form: these Pallas kernels, which XLA counts as nothing, are costed from "
            f"their shapes and block sizes: {calls}; {'; '.join(bases)}; bytes are operands "
            "read and outputs written once"]


def _notes(result: FlopsResult, by: str) -> list[str]:
    notes = []
    if result.partitions > 1:
        notes.append(f"figures are per device: the module is the program each of "
                     f"{result.partitions} devices runs (SPMD partitions x replicas)")
    for loop in result.unknown_loops:
        notes.append(f"warning: the trip count of {loop.instruction} (in {loop.computation}) is "
                     "unknown; its body is counted once")
    if result.unattributed:
        calls = ", ".join(f"{c.target} x{c.count}" for c in result.unattributed)
        notes.append(f"unattributed: the FLOPs of these custom-calls are unknown and not "
                     f"counted (their bytes are): {calls}")
    notes += closed_form_notes(result)
    if result.unknown_opcodes:
        notes.append("opcodes unknown to hloscope, costed as data movement: "
                     + ", ".join(result.unknown_opcodes))
    if by == "layer" and any(r.iterations > 1 for r in result.rows("layer")):
        notes.append("a loop row is a scanned stack of layers: its figures are over all "
                     "iterations; one layer is one iteration (FLOPs per iteration)")
    if by == "scope" and result.scope_prefix:
        notes.append(f"scopes are shown below {result.scope_prefix}/ (shared by every op), "
                     f"to depth {result.scope_depth}")
    if not result.trip_counts_applied:
        notes.append("XLA's conventions: loop bodies counted once, custom-calls as -1 FLOP")
    return notes
