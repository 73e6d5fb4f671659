"""`hloscope remat`: recomputed instructions (jax.checkpoint and XLA's pass) and their cost."""
from __future__ import annotations

from pathlib import Path

import click

from hloscope.analyses.cost.flops import DEFAULT_SCOPE_DEPTH
from hloscope.api import remat
from hloscope.cli.common import HloInput, emit, hlo_input, output_options
from hloscope.reports.remat import remat_report


@click.command("remat")
@hlo_input()
@click.option("--by", type=click.Choice(("layer", "scope")), default="layer",
              show_default=True, help="The breakdown of the recomputation to show.")
@click.option("--depth", type=click.IntRange(min=1), default=DEFAULT_SCOPE_DEPTH,
              show_default=True, help="Name-stack depth of --by scope.")
@click.option("--top", type=click.IntRange(min=1), default=None,
              help="Show the N largest rows and sum the rest into one.")
@output_options
def command(hlo: HloInput, by: str, depth: int, top: int | None, fmt: str,
            output: Path | None, force: bool) -> None:
    """Count what is recomputed -- ops JAX replays under jax.checkpoint and instructions XLA's
    rematerialization pass cloned (.remat) -- and their FLOPs and bytes, per layer or scope.
    """
    emit(remat_report(remat(hlo.load(), scope_depth=depth), by, top), fmt, output, force)
