"""Results in Jupyter: each result class's `_repr_html_` and `_repr_markdown_` (`frames.Rendered`).

The HTML is the command's own Report rendered by the HTML renderer the report page uses
(`renderers.html.report_html`), plus the report's charts as inline SVG where the result has one
(a memory timeline, FLOPs by layer and phase) — drawn when matplotlib is installed, else a line
says how to get them. It is a fragment: one `<div class="hloscope-view">` with a style sheet
scoped to that class (a notebook holds many outputs and its own styles), no script, nothing
loaded. Long tables are capped like the commands' defaults (`TOP` rows, the rest summed);
`to_pandas()` has every row. The Markdown is the `--format markdown` report.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

from hloscope.analyses.cost.flops import FlopsResult
from hloscope.analyses.cost.remat import RematResult
from hloscope.analyses.gate.check import CheckResult
from hloscope.analyses.gate.compare import CompareResult
from hloscope.analyses.gate.headline import Metric
from hloscope.analyses.memory.analysis import MemoryResult
from hloscope.analyses.oom.diagnosis import OomDiagnosis
from hloscope.analyses.summary.inspect import InspectResult
from hloscope.analyses.summary.variant import BuildSummary
from hloscope.analyses.trace.analysis import TraceResult
from hloscope.dataframes import register_view
from hloscope.errors import UsageError
from hloscope.formats.snapshot import Snapshot
from hloscope.reports.check import check_report, snapshot_report
from hloscope.reports.compare import compare_report
from hloscope.reports.flops import flops_report
from hloscope.reports.frontier import frontier_report
from hloscope.reports.inspect import inspect_report
from hloscope.reports.memory import memory_report
from hloscope.reports.oom import oom_report
from hloscope.reports.remat import remat_report
from hloscope.reports.renderers import markdown
from hloscope.reports.renderers.html import report_html
from hloscope.reports.report import Report
from hloscope.reports.sweep import build_report, sweep_report
from hloscope.reports.trace import trace_report
from hloscope.sweeps.core import SweepResult
from hloscope.sweeps.frontier import FrontierResult

TOP = 20
VIEW_CLASS = "hloscope-view"
VIEW_STYLE = f"""
.{VIEW_CLASS} {{ font: 13px/1.4 system-ui, sans-serif; max-width: 100%; }}
.{VIEW_CLASS} table {{ border-collapse: collapse; margin: 4px 0 10px; table-layout: auto; }}
.{VIEW_CLASS} th, .{VIEW_CLASS} td {{ border: 1px solid #d8d8d8; padding: 2px 6px;
  text-align: left; vertical-align: top; overflow-wrap: anywhere; }}
.{VIEW_CLASS} td.num, .{VIEW_CLASS} th.num {{ text-align: right; }}
.{VIEW_CLASS} dl.summary {{ display: grid; grid-template-columns: max-content auto;
  gap: 1px 14px; }}
.{VIEW_CLASS} dl.summary dd {{ margin: 0; }}
.{VIEW_CLASS} svg {{ max-width: 100%; height: auto; }}
.{VIEW_CLASS} .muted {{ color: #777; }}
"""

Chart = Callable[[], str]


def view(report: Report, kind: str, charts: Sequence[Chart] = ()) -> str:
    """The report as an HTML fragment with its charts, or as Markdown."""
    if kind == "markdown":
        return markdown.render(report)
    parts = [f"<style>{VIEW_STYLE}</style>", report_html(report, level=3)]
    parts += [_chart(chart) for chart in charts]
    return f'<div class="{VIEW_CLASS}">' + "\n".join(parts) + "</div>"


def _chart(chart: Chart) -> str:
    try:
        return f"<figure>{chart()}</figure>"
    except UsageError as missing:  # matplotlib absent: say so, show the tables
        return f'<p class="muted">{escape(str(missing))}</p>'


def _timeline(result: MemoryResult | None) -> list[Chart]:
    if result is None or not result.timeline:
        return []
    from hloscope.reports.renderers.plot import timeline_svg

    return [lambda: timeline_svg(result)]


@register_view(InspectResult)
def _inspect(result: InspectResult, kind: str) -> str:
    return view(inspect_report(result, TOP), kind)


@register_view(FlopsResult)
def _flops(result: FlopsResult, kind: str) -> str:
    from hloscope.reports.renderers.html_figures import flops_svg

    by = "phase" if "phase" in result.breakdowns else next(iter(result.breakdowns))
    charts = [lambda: flops_svg(result)] if {"layer", "phase"} <= result.breakdowns.keys() else []
    return view(flops_report(result, by, TOP), kind, charts)


@register_view(RematResult)
def _remat(result: RematResult, kind: str) -> str:
    return view(remat_report(result, "layer", TOP), kind)


@register_view(MemoryResult)
def _memory(result: MemoryResult, kind: str) -> str:
    return view(memory_report(result, "category", TOP), kind, _timeline(result))


@register_view(OomDiagnosis)
def _oom(diagnosis: OomDiagnosis, kind: str) -> str:
    return view(oom_report(diagnosis), kind, _timeline(diagnosis.memory))


@register_view(CompareResult)
def _compare(result: CompareResult, kind: str) -> str:
    return view(compare_report(result, TOP), kind)


@register_view(Snapshot)
def _snapshot(snapshot: Snapshot, kind: str) -> str:
    metrics = [Metric(key, key.replace("_", " "), _kind(key), value)
               for key, value in snapshot.metrics.items()]
    return view(snapshot_report(snapshot, metrics), kind)


def _kind(key: str) -> str:
    return "bytes" if key.endswith("_bytes") else "flops" if key.endswith("flops") else "int"


@register_view(CheckResult)
def _check(result: CheckResult, kind: str) -> str:
    return view(check_report(result, result.kinds), kind)


@register_view(TraceResult)
def _trace(result: TraceResult, kind: str) -> str:
    return view(trace_report(result, "phase", TOP), kind)


@register_view(BuildSummary)
def _build(summary: BuildSummary, kind: str) -> str:
    return view(build_report(summary), kind)


@register_view(SweepResult)
def _sweep(result: SweepResult, kind: str) -> str:
    return view(sweep_report(result), kind)


@register_view(FrontierResult)
def _frontier(result: FrontierResult, kind: str) -> str:
    from hloscope.reports.renderers.frontier_plot import frontier_svg

    return view(frontier_report(result), kind, [lambda: frontier_svg(result.to_dict())])


def registered() -> tuple[type, ...]:
    """The result classes with a notebook view (for tests and docs)."""
    return (InspectResult, FlopsResult, RematResult, MemoryResult, OomDiagnosis, CompareResult,
            Snapshot, CheckResult, TraceResult, BuildSummary, SweepResult, FrontierResult)


__all__ = ["TOP", "registered", "view"]
