"""Every table of a result, untruncated: what `to_pandas()` turns into DataFrames.

The command reports show one breakdown and the top rows; these give all of them and every row
(no "(N more)" row), so each frame's column sums are the result's totals. Each factory is
registered for its result class with `hloscope.dataframes.register_tables`; `import hloscope`
imports this module, so every result's `to_pandas()` finds its tables.
"""
from __future__ import annotations

from hloscope.analyses.cost.flops import BREAKDOWNS, FlopsResult
from hloscope.analyses.cost.remat import RematResult
from hloscope.analyses.gate.compare import CompareResult
from hloscope.analyses.memory.analysis import GROUPINGS, MemoryResult
from hloscope.analyses.oom.diagnosis import OomDiagnosis
from hloscope.analyses.summary.inspect import InspectResult
from hloscope.dataframes import register_tables
from hloscope.reports.flops import breakdown_table
from hloscope.reports.inspect import inspect_report
from hloscope.reports.memory import group_table, live_table, spaces_table, timeline_table
from hloscope.reports.report import Column, Table
from hloscope.sweeps.core import SweepResult


@register_tables(InspectResult)
def inspect_tables(result: InspectResult) -> list[Table]:
    return inspect_report(result).tables


@register_tables(FlopsResult)
def flops_tables(result: FlopsResult) -> list[Table]:
    return [breakdown_table(result.rows(by), by, result.total.flops, None)
            for by in BREAKDOWNS if by in result.breakdowns]


@register_tables(RematResult)
def remat_tables(result: RematResult) -> list[Table]:
    return [breakdown_table(result.rows(by), by, result.recompute_flops, None)
            for by in ("layer", "scope")]


@register_tables(MemoryResult)
def memory_tables(result: MemoryResult) -> list[Table]:
    return [live_table(result.live_at_peak, None), timeline_table(result.timeline),
            _spaces_table(result), spaces_table(result.story),
            *(group_table(result, by) for by in GROUPINGS)]


def _spaces_table(result: MemoryResult) -> Table:
    columns = [Column("memory_space", "S(n)", "int"), Column("name", "name"),
               Column("location", "location"), Column("peak_bytes", "live peak", "bytes"),
               Column("padded_peak_bytes", "padded", "bytes"),
               Column("peak_time", "peak at", "int"), Column("peak_instruction", "instruction")]
    return Table("spaces", "Live peak of each memory space", columns,
                 [space.to_dict() for space in result.spaces])


@register_tables(OomDiagnosis)
def oom_tables(diagnosis: OomDiagnosis) -> list[Table]:
    from hloscope.reports.oom import oom_report

    return oom_report(diagnosis).tables


@register_tables(SweepResult)
def sweep_tables(result: SweepResult) -> list[Table]:
    """The variants (and the batch search's probes): to_pandas() stays the variants frame; the
    checkpoint names are in to_dict()'s rows (`checkpoint_names`) and the report."""
    from hloscope.reports.sweep import sweep_report

    return [t for t in sweep_report(result).tables if t.name != "checkpoint_names"]


@register_tables(CompareResult)
def compare_tables(result: CompareResult) -> list[Table]:
    from hloscope.reports.compare import compare_report

    return compare_report(result).tables
