"""`hloscope flops`: FLOPs, transcendentals and bytes, by opcode, scope, layer or phase."""
from __future__ import annotations

from pathlib import Path

import click

from hloscope.analyses.cost.flops import BREAKDOWNS, DEFAULT_SCOPE_DEPTH
from hloscope.api import flops
from hloscope.cli.common import HloInput, emit, hlo_input, output_options
from hloscope.reports.flops import flops_report


@click.command("flops")
@hlo_input()
@click.option("--by", type=click.Choice(BREAKDOWNS), default="phase", show_default=True,
              help="The breakdown to show (JSON output holds all four).")
@click.option("--depth", type=click.IntRange(min=1), default=DEFAULT_SCOPE_DEPTH,
              show_default=True, help="Name-stack depth of --by scope.")
@click.option("--top", type=click.IntRange(min=1), default=None,
              help="Show the N largest rows and sum the rest into one.")
@click.option("--xla-conventions", is_flag=True,
              help="Count as XLA's cost_analysis() does: loop bodies once, custom-calls -1.")
@output_options
def command(hlo: HloInput, by: str, depth: int, top: int | None, xla_conventions: bool,
            fmt: str, output: Path | None, force: bool) -> None:
    """FLOPs, transcendentals and bytes accessed of an HLO module, following XLA's cost analysis,
    with while loops multiplied by their trip counts, broken down by opcode, source scope, layer
    or phase (forward, backward, recompute, optimizer, other).
    """
    result = flops(hlo.load(), scope_depth=depth, xla_conventions=xla_conventions)
    emit(flops_report(result, by, top), fmt, output, force)
