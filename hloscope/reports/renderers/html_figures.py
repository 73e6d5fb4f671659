"""The report page's pictures, as inline SVG: FLOPs by layer and phase, and several inputs'
memory timelines on one chart (the single timeline is `plot.timeline_svg`).

matplotlib draws them (`hloscope[plot]`), text kept as text; nothing here computes a figure.
"""
from __future__ import annotations

from typing import Any

from hloscope.analyses.cost.flops import FlopsResult
from hloscope.analyses.summary.overview import ModuleOverview
from hloscope.reports.renderers.plot import PHASE_COLOURS, outside_legend, render_svg
from hloscope.units import format_flops

MAX_LAYER_BARS = 24


def flops_svg(result: FlopsResult) -> str:
    """Two bar charts: FLOPs per layer (or loop) and per phase."""

    def draw(axes: Any) -> None:
        by_layer, by_phase = axes
        layers = result.rows("layer")[:MAX_LAYER_BARS]
        _bars(by_layer, [r.key for r in layers], [r.flops for r in layers], "#4c72b0")
        by_layer.set_title("FLOPs by layer")
        phases = result.rows("phase")
        _bars(by_phase, [r.key for r in phases], [r.flops for r in phases],
              [PHASE_COLOURS.get(r.key, "#bbbbbb") for r in phases])
        by_phase.set_title("FLOPs by phase")

    return render_svg(draw, nrows=1, ncols=2, figsize=(11, 3.8),
                      gridspec_kw={"width_ratios": [3, 2]})


def _bars(axes: Any, labels: list[str], values: list[int], colour: Any) -> None:
    positions = list(range(len(labels)))
    axes.barh(positions, values, color=colour)
    axes.set_yticks(positions, labels, fontsize="small")
    axes.invert_yaxis()
    for position, value in zip(positions, values, strict=True):
        axes.text(value, position, f" {format_flops(value)}", va="center", fontsize="x-small")
    axes.set_xlabel("FLOPs")
    axes.margins(x=0.25)


def overlay_svg(overviews: list[ModuleOverview]) -> str:
    """Each input's live bytes over its schedule (stretched to one width), peaks marked."""

    def draw(axes: Any) -> None:
        for item in overviews:
            _overlay_line(axes, item)
        axes.set_xlabel("position in the schedule (0 = start, 1 = end)")
        axes.set_ylabel("live MiB")
        axes.set_title("Memory timelines side by side (device spaces)")
        axes.set_ylim(bottom=0)
        outside_legend(axes)

    return render_svg(draw, figsize=(11, 4.2))


def _overlay_line(axes: Any, item: ModuleOverview) -> None:
    steps = item.memory.timeline if item.memory else []
    if not steps:
        return
    width = max(len(steps) - 1, 1)
    xs = [n / width for n in range(len(steps))]
    ys = [s.live_bytes / 2**20 for s in steps]
    line = axes.plot(xs, ys, linewidth=1.2, label=item.label)[0]
    peak = max(range(len(ys)), key=ys.__getitem__)
    axes.plot([xs[peak]], [ys[peak]], marker="v", color=line.get_color(), linestyle="none")
