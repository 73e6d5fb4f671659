"""The page `hloscope report` makes of analysed inputs (`analyses.summary.overview.OverviewSet`).

One input gives one section; several (or a sweep) add a first section with the side-by-side
comparison, the timelines on one chart and the "fastest that fits" verdict. Which inputs are read
and analysed is the API's business (`hloscope.api.report`); this module only lays them out.
"""
from __future__ import annotations

from hloscope.analyses.summary.overview import ModuleOverview, OverviewSet, Verdict
from hloscope.formats.sweep import SweepRecord
from hloscope.reports.overview import (
    buffers_report,
    comparison_report,
    flops_report,
    summary_report,
    sweep_verdict_report,
)
from hloscope.reports.remat import remat_report
from hloscope.reports.renderers.html_figures import flops_svg, overlay_svg
from hloscope.reports.renderers.html_page import Figure, Page, Section
from hloscope.reports.renderers.plot import timeline_svg

DEFAULT_TOP = 15


def report_page(found: OverviewSet, title: str | None = None, top: int = DEFAULT_TOP) -> Page:
    overviews = found.overviews
    sections = [_input_section(n, item, top) for n, item in enumerate(overviews, 1)]
    if found.verdict is not None:
        sections.insert(0, _comparison_section(overviews, found.verdict, found.capacity,
                                               found.sweep))
    return Page(title or _title(overviews, found.sweep), sections, found.notes)


def _title(overviews: list[ModuleOverview], sweep: SweepRecord | None) -> str:
    if sweep is not None:
        return f"hloscope report: sweep of {sweep.model} on {sweep.target}"
    return "hloscope report: " + ", ".join(item.label for item in overviews)


def _comparison_section(overviews: list[ModuleOverview], verdict: Verdict,
                        capacity: int | None, sweep: SweepRecord | None) -> Section:
    blocks: list = [sweep_verdict_report(sweep)] if sweep is not None else []
    blocks.append(comparison_report(overviews, verdict, capacity))
    if any(item.memory for item in overviews):
        blocks.append(Figure("overlay", "Live device bytes of every input over its schedule; "
                             "triangles mark each peak", overlay_svg(overviews)))
    return Section("comparison", "Comparison", blocks)


def _input_section(number: int, item: ModuleOverview, top: int) -> Section:
    blocks: list = [summary_report(item)]
    if item.memory is not None:
        blocks.append(Figure(
            "timeline", "Memory timeline: live device bytes at each top-level instruction, "
            "phases shaded, the peak marked", timeline_svg(item.memory),
            {"peak-bytes": str(item.memory.peak_bytes), "input": item.label}))
    blocks.append(buffers_report(item, top))
    blocks += [flops_report(item), Figure("flops", "FLOPs by layer and by phase",
                                          flops_svg(item.flops), {"input": item.label})]
    blocks.append(remat_report(item.remat))
    return Section(f"input-{number}", item.label, blocks)


FRONTIER_CAPTION = ("Left: predicted tokens/s per device of the fastest fitting row of each "
                    "policy family (stars: each batch's winner). Right: predicted (hollow) "
                    "and compiled (filled) device bytes, and the capacity line")


def frontier_page(data: dict, title: str | None = None) -> Page:
    """The page of a `sweep --search frontier` result (its frontier.json)."""
    from hloscope.reports.frontier import frontier_report
    from hloscope.reports.renderers.frontier_plot import frontier_svg

    blocks: list = [Figure("frontier", FRONTIER_CAPTION, frontier_svg(data),
                           {"capacity-bytes": str(data["capacity_bytes"])}),
                    frontier_report(data)]
    return Page(title or "hloscope report: per-tensor policy frontier",
                [Section("frontier", "Frontier", blocks)])
