"""`hloscope memory`: the live peak, the buffers live at it, and the memory timeline."""
from __future__ import annotations

from pathlib import Path

import click

from hloscope.analyses.memory.analysis import DEFAULT_SCOPE_DEPTH, GROUPINGS
from hloscope.api import memory
from hloscope.cli.common import HloInput, emit, hlo_input, output_options
from hloscope.reports.memory import memory_report
from hloscope.reports.output import check_writable


@click.command("memory")
@hlo_input()
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True,
              help="Show the N largest buffers live at the peak and sum the rest.")
@click.option("--by", type=click.Choice(GROUPINGS), default="category", show_default=True,
              help="Group the buffers live at the peak (JSON output holds every grouping).")
@click.option("--depth", type=click.IntRange(min=1), default=DEFAULT_SCOPE_DEPTH,
              show_default=True, help="Name-stack depth of --by scope.")
@click.option("--plot", "plot", metavar="FILE", default=None,
              type=click.Path(dir_okay=False, path_type=Path),
              help="Draw the timeline to FILE (.png, .svg or .pdf; needs matplotlib).")
@click.option("--backend", type=click.Choice(["cpu", "gpu", "tpu"]), default=None,
              help="What S(n) memory spaces mean (default: from the dump's file name and "
                   "layouts).")
@output_options
def command(hlo: HloInput, top: int, by: str, depth: int, plot: Path | None,
            backend: str | None, fmt: str, output: Path | None, force: bool) -> None:
    """The live peak of a scheduled HLO module: how many bytes of buffers are live at once, when,
    which buffers (size, shape, source line, layer, category), and a timeline. From a dump
    folder, XLA's own live-range peak and allocation are shown beside it.

    CSV output is the timeline (live bytes at each top-level instruction).
    """
    if plot is not None:
        from hloscope.reports.renderers.plot import check_plot_path

        check_plot_path(plot)
        check_writable(plot, force)
    result = memory(hlo.program(), backend=backend, scope_depth=depth)
    if plot is not None:
        from hloscope.reports.renderers.plot import plot_timeline

        plot_timeline(result, plot)
    emit(memory_report(result, by, top, timeline_first=fmt == "csv"), fmt, output, force)
