"""`hloscope snapshot FILE -o baseline.json`: the figures a CI gate keeps, as stable JSON."""
from __future__ import annotations

from pathlib import Path

import click

from hloscope.analyses.gate.snapshot import snapshot_program
from hloscope.cli.common import HloInput, emit, hlo_input, output_options
from hloscope.reports.check import snapshot_report


@click.command("snapshot")
@hlo_input()
@output_options
def command(hlo: HloInput, fmt: str, output: Path | None, force: bool) -> None:
    """The figures `hloscope check` compares (peak, allocation, FLOPs, recompute, remat and
    instruction counts, collectives; per device, as integers) and the toolchain that compiled
    the program when a `hloscope build` manifest says (null when unknown). With -o FILE.json it
    is the baseline file; it is never overwritten without --force.
    """
    taken = snapshot_program(hlo.program(), Path(hlo.source).name)
    emit(snapshot_report(taken.snapshot, taken.metrics()), fmt, output, force)
