"""`hloscope compare A B`: two compiled programs side by side, and what explains the difference."""
from __future__ import annotations

from pathlib import Path

import click

from hloscope.api import compare
from hloscope.cli.common import HloInput, emit, hlo_input, output_options
from hloscope.reports.compare import compare_report


@click.command("compare")
@hlo_input("a", "b")
@click.option("--device", metavar="NAME", default=None,
              help="Add a roofline step-time estimate for this device (v5e, h100, ...).")
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True,
              help="Show the N largest differences of each table (JSON holds them all).")
@output_options
def command(a: HloInput, b: HloInput, device: str | None, top: int, fmt: str,
            output: Path | None, force: bool) -> None:
    """Compare two HLO modules (files or dump folders), B against A: peak memory, XLA's
    allocation, argument/output bytes, FLOPs, recompute, remat counts, instructions, fusions and
    collectives with their deltas; then the opcodes, scopes, layers and phases whose counts or
    FLOPs differ, the buffers live at the peak that appear, disappear or change (matched by
    op_name and shape), and where the peak moved. Figures are per device.
    """
    result = compare(a.program(), b.program(), device, labels=_labels(a, b))
    emit(compare_report(result, top), fmt, output, force)


def _labels(a: HloInput, b: HloInput) -> tuple[str, str]:
    """The inputs' file or folder names; their paths as given when the names are the same."""
    name_a, name_b = ("<stdin>" if hlo.source == "-" else Path(hlo.source).name for hlo in (a, b))
    return (a.source, b.source) if name_a == name_b else (name_a, name_b)
