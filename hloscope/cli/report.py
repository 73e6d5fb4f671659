"""`hloscope report`: one self-contained HTML page about one or more programs."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from hloscope.cli.common import lenient_option
from hloscope.devices import check_device_or_capacity
from hloscope.errors import UsageError
from hloscope.reports.output import check_writable


@click.command("report")
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT...")
@click.option("-o", "--output", metavar="FILE.html", required=True,
              type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="Write the page to FILE.html (- for standard output).")
@click.option("--force", is_flag=True, help="Overwrite FILE.html if it exists.")
@click.option("--module", metavar="NAME", default=None,
              help="In a dump folder or multi-module file, read this module.")
@click.option("--top", type=click.IntRange(min=1), default=15, show_default=True,
              help="Show the N largest buffers live at each peak.")
@click.option("--device", metavar="NAME", default=None,
              help="Judge fit against this device's memory (v5e, h100, ...).")
@click.option("--capacity", metavar="SIZE", default=None,
              help="Judge fit against this many bytes per device (e.g. 16GiB).")
@click.option("--title", default=None, help="The page's title.")
@lenient_option
def command(inputs: tuple[str, ...], output: Path, force: bool, module: str | None, top: int,
            device: str | None, capacity: str | None, title: str | None, lenient: bool) -> None:
    """Write one HTML file (no network needed to open it) with, for each INPUT — an HLO file,
    an XLA dump folder or a `hloscope build` folder — the summary, the memory timeline with the
    peak and phases marked, the top live buffers at the peak, FLOPs by layer and phase and the
    remat counts. Several inputs, or a `hloscope sweep -o DIR` folder, add the side-by-side
    comparison and the "fastest that fits" verdict.
    """
    from hloscope.api import report

    stdout = str(output) == "-"
    if not stdout:
        _check_suffix(output)
        check_writable(output, force)
    html = report(*inputs, output=None if stdout else output, force=force, title=title,
                  module=module, capacity=_capacity(device, capacity), top=top,
                  lenient=lenient)
    if stdout:
        sys.stdout.write(html)


def _check_suffix(output: Path) -> None:
    if output.suffix.lower() not in (".html", ".htm"):
        raise UsageError(f"{output}: the report is HTML; name the file with .html")


def _capacity(device: str | None, capacity: str | None) -> int | None:
    check_device_or_capacity(device, capacity, options=True)
    if capacity is not None:
        from hloscope.units import parse_bytes

        return parse_bytes(capacity)
    if device is None:
        return None
    from hloscope.devices import get_device, memory_budget

    budget = memory_budget(get_device(device))
    if budget is None:
        raise UsageError(f"the memory of {device!r} is unknown; pass --capacity")
    return budget
