"""`hloscope snapshot FILE -o baseline.json`: the figures a CI gate keeps, as stable JSON."""
from __future__ import annotations

from pathlib import Path

import click

from hloscope.analyses.check import take_snapshot
from hloscope.analyses.headline import headline
from hloscope.analyses.overview import overview
from hloscope.cli.common import HloInput, emit, hlo_input, output_options
from hloscope.reports.check import snapshot_report


@click.command("snapshot")
@hlo_input()
@output_options
def command(hlo: HloInput, fmt: str, output: Path | None, force: bool) -> None:
    """The figures `hloscope check` compares (peak, allocation, FLOPs, recompute, remat and
    instruction counts, collectives; per device) and the toolchain that compiled the program
    when its build manifest says. With -o FILE.json it is the baseline file; it is never
    overwritten without --force.
    """
    item = overview(hlo.load(), Path(hlo.source).name)
    snapshot = take_snapshot(item, hlo.source)
    emit(snapshot_report(snapshot, headline(item)), fmt, output, force)
