"""The memory timeline as a picture: live bytes per top-level step, phases shaded, peak marked.

matplotlib is an optional dependency (`pip install 'hloscope[plot]'`), imported only when a plot
is drawn. The format follows the file's suffix (.png, .svg, .pdf). A loop (or call, conditional)
is one step; its inner peak is drawn as a thin bar above the step. The x axis is the schedule
position t that every report prints (XLA's live-range time: a loop's body is numbered before the
loop, so a step spans the positions since the previous one), and the legend sits below the
axes, where it cannot cover the line or the peak marker.
"""
from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hloscope.analyses.memory.analysis import MemoryResult, TimelineStep
from hloscope.errors import UsageError
from hloscope.optional import require
from hloscope.units import BINARY_UNITS, format_bytes

PLOT_SUFFIXES = (".png", ".svg", ".pdf")
PHASE_COLOURS = {"forward": "#4c72b0", "backward": "#dd8452", "recompute": "#c44e52",
                 "optimizer": "#55a868", "other": "#bbbbbb"}


def check_plot_path(path: Path) -> None:
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise UsageError(f"cannot tell the plot format of {str(path)!r}; "
                         f"name it with one of {', '.join(PLOT_SUFFIXES)}")


def plot_timeline(result: MemoryResult, path: Path) -> None:
    """Writes the timeline of `result` to `path` (format from its suffix), atomically."""
    write_plot(lambda axes: _draw(axes, result), path, figsize=(11, 4.5), dpi=120)


def write_plot(draw: Callable[[Any], None], path: Path, **subplots: Any) -> None:
    """Draws on `pyplot.subplots(**subplots)`'s axes and writes the figure to `path` (format
    from its suffix), atomically."""
    check_plot_path(path)
    pyplot = load_pyplot()
    figure, axes = pyplot.subplots(**subplots)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.",
                                         suffix=path.suffix)
    os.close(handle)
    try:
        draw(axes)
        figure.tight_layout()
        figure.savefig(temporary, format=path.suffix.lower().lstrip("."))
        # mkstemp creates 0600; a plot is shared like any output file (0666 less the umask)
        os.chmod(temporary, path.stat().st_mode & 0o777 if path.exists() else _new_file_mode())
        os.replace(temporary, path)
    finally:
        pyplot.close(figure)
        with contextlib.suppress(OSError):
            os.remove(temporary)


def _new_file_mode() -> int:
    """0o666 less the umask: what `open(path, "w")` would have created (as reports.output)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def timeline_svg(result: MemoryResult) -> str:
    """The timeline as an inline `<svg>` element (text kept as text); the group with id
    `peak-label` reads `live peak N bytes (...)`, N being `result.peak_bytes`."""

    def draw(axes: Any) -> None:
        _draw(axes, result)
        axes.text(0.99, 0.97, f"live peak {result.peak_bytes:,} bytes "
                  f"({format_bytes(result.peak_bytes)})", transform=axes.transAxes,
                  ha="right", va="top", color="red", gid="peak-label")

    return render_svg(draw, figsize=(11, 4.5))


def render_svg(draw: Callable[[Any], None], **subplots: Any) -> str:
    """Draws on `pyplot.subplots(**subplots)`'s axes and returns the figure as inline SVG."""
    pyplot = load_pyplot()
    import matplotlib

    # matplotlib's stubs want rcParams names as a Literal (matplotlib.typing.RcKeyType, not in
    # the 3.8 the dependency allows), which a dict[str, str] constant is not
    with matplotlib.rc_context(SVG_STYLE):  # type: ignore[arg-type]
        figure, axes = pyplot.subplots(**subplots)
        try:
            draw(axes)
            return svg_text(figure)
        finally:
            pyplot.close(figure)


SVG_STYLE = {"svg.fonttype": "none", "svg.hashsalt": "hloscope"}
"""Text stays text (searchable, and checkable in a browser); ids do not change between runs."""


def svg_text(figure: Any) -> str:
    """`figure` as an `<svg>` element to inline in HTML (no XML prolog or doctype)."""
    figure.tight_layout()
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def load_pyplot() -> Any:
    matplotlib = require("matplotlib", "plot", "plots need matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    return pyplot


def _draw(axes: Any, result: MemoryResult) -> None:
    steps = result.timeline
    scale, unit = _unit(max([1, result.peak_bytes, *(s.live_bytes for s in steps)]))
    xs = [s.time for s in steps]
    axes.step(xs, [s.live_bytes / scale for s in steps], where="post", color="black",
              linewidth=1.0, label="live bytes")
    _inner_peaks(axes, steps, scale)
    _shade_phases(axes, steps)
    _mark_peak(axes, result, scale, unit)
    axes.set_xlabel("schedule position t")
    axes.set_ylabel(f"live {unit}")
    axes.set_title(f"{result.module_name}: live buffers ({result.backend}, device spaces)")
    axes.set_xlim(min(xs, default=0) - 0.5, max(max(xs, default=0) + 0.5, 0.5))
    axes.set_ylim(bottom=0)
    outside_legend(axes)


def outside_legend(axes: Any) -> None:
    """The legend in a row below the axes (and their x label): it covers no data."""
    handles, _ = axes.get_legend_handles_labels()
    if handles:
        axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), fontsize="small",
                    ncol=min(len(handles), 6), frameon=False)


def _inner_peaks(axes: Any, steps: list[TimelineStep], scale: float) -> None:
    loops = [s for s in steps if s.inner_peak_bytes is not None]
    if loops:
        axes.vlines([s.time for s in loops], [s.live_bytes / scale for s in loops],
                    [max(s.inner_peak_bytes or 0, s.live_bytes) / scale for s in loops],
                    colors="purple", linewidth=2.0, label="inside loop/call")


def _shade_phases(axes: Any, steps: list[TimelineStep]) -> None:
    labelled: set[str] = set()
    start = 0
    for n in range(1, len(steps) + 1):
        if n < len(steps) and steps[n].phase == steps[start].phase:
            continue
        phase = steps[start].phase
        left = steps[start - 1].time + 0.5 if start else steps[0].time - 0.5
        axes.axvspan(left, steps[n - 1].time + 0.5, color=PHASE_COLOURS.get(phase, "#dddddd"),
                     alpha=0.18, linewidth=0, label=None if phase in labelled else phase)
        labelled.add(phase)
        start = n


def _mark_peak(axes: Any, result: MemoryResult, scale: float, unit: str) -> None:
    if not result.timeline:
        return
    y = result.peak_bytes / scale
    axes.plot([result.peak_time], [y], marker="v", color="red", markersize=8,
              linestyle="none", label=f"peak {y:.3g} {unit} at t={result.peak_time}",
              gid="peak-marker")
    axes.annotate(result.peak_instruction, (result.peak_time, y), textcoords="offset points",
                  xytext=(6, 6), fontsize="x-small", color="red")


def _unit(largest: float) -> tuple[float, str]:
    scale, exponent = 1.0, 0
    while largest / scale >= 1024 and exponent < len(BINARY_UNITS) - 1:
        scale, exponent = scale * 1024, exponent + 1
    return scale, BINARY_UNITS[exponent]
