"""`hloscope inspect`: what a module is — counts, op mix, parameter and output bytes."""
from __future__ import annotations

from pathlib import Path

import click

from hloscope.api import inspect
from hloscope.cli.common import HloInput, emit, hlo_input, output_options
from hloscope.reports.inspect import inspect_report

DEFAULT_TOP = 20


@click.command("inspect")
@hlo_input()
@click.option("--top", type=click.IntRange(min=1), default=DEFAULT_TOP, show_default=True,
              help="Show the N largest parameters, outputs and opcodes and sum the rest "
                   "(JSON holds them all).")
@output_options
def command(hlo: HloInput, top: int, fmt: str, output: Path | None, force: bool) -> None:
    """Summarise an HLO module: computations, instructions, op counts, parameters and outputs.

    HLO is an HLO text file, a .gz file, an XLA dump folder or - for standard input.
    """
    emit(inspect_report(inspect(hlo.load()), top), fmt, output, force)
