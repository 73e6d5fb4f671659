"""`hloscope check FILE --baseline B`: a CI gate on memory, FLOPs and remat against a snapshot."""
from __future__ import annotations

import os
from pathlib import Path

import click

from hloscope.api import check, snapshot
from hloscope.cli.common import HloInput, emit, hlo_input, output_options
from hloscope.errors import EXIT_CHECK_FAILED, EXIT_OK
from hloscope.reports.check import check_report
from hloscope.reports.registry import render
from hloscope.reports.report import Report
from hloscope.units import parse_threshold

SUMMARY_VARIABLE = "GITHUB_STEP_SUMMARY"


@click.command("check")
@hlo_input()
@click.option("--baseline", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The snapshot to compare with (from `hloscope snapshot -o FILE.json`).")
@click.option("--max-peak-increase", metavar="N%|BYTES", default=None,
              help="Fail when the live peak grows by more (e.g. 2% or 64MiB).")
@click.option("--max-allocation-increase", metavar="N%|BYTES", default=None,
              help="Fail when XLA's allocation grows by more.")
@click.option("--max-flops-increase", metavar="N%|FLOPS", default=None,
              help="Fail when the FLOPs per device grow by more (e.g. 1%).")
@click.option("--max-remat-increase", type=click.IntRange(min=0), default=None,
              help="Fail when more instructions are recomputed than this many more.")
@click.option("--max-peak", metavar="BYTES", default=None,
              help="Fail when the live peak exceeds this (e.g. 15.75GiB).")
@click.option("--device", metavar="NAME", default=None,
              help="Fail when the program does not fit this device's memory budget (XLA's "
                   "allocation, else the live peak); adds its roofline step time.")
@click.option("--max-step-time-increase", metavar="N%", default=None,
              help="With --device: fail when the estimated step time grows by more.")
@click.option("--allow-backend-change", is_flag=True,
              help="Check against a baseline compiled for another backend (refused otherwise).")
@click.option("--update", is_flag=True, help="Rewrite the baseline with this program's figures.")
@output_options
def command(hlo: HloInput, baseline: Path, max_peak_increase: str | None,
            max_allocation_increase: str | None, max_flops_increase: str | None,
            max_remat_increase: int | None, max_peak: str | None, device: str | None,
            max_step_time_increase: str | None, allow_backend_change: bool, update: bool,
            fmt: str, output: Path | None,
            force: bool) -> int:
    """Exit 0 when the program is within the thresholds of the baseline, 1 with a table of the
    violations otherwise. A toolchain that differs from the baseline's is said beside them. At
    least one threshold (or --device) is needed, and a baseline compiled for another backend is
    refused unless --allow-backend-change (exit 2). With $GITHUB_STEP_SUMMARY set, the Markdown
    report is appended to it.
    """
    if max_step_time_increase is not None:
        if device is None:
            raise click.UsageError("--max-step-time-increase needs --device")
        if parse_threshold(max_step_time_increase).fraction is None:
            raise click.BadParameter(f"{max_step_time_increase!r}: give a percentage such as 5%",
                                     param_hint="--max-step-time-increase")
    program = hlo.program()
    if update:
        snapshot(program, baseline, force=True)
        click.echo(f"updated the baseline {baseline}", err=True)
        return EXIT_OK
    result = check(program, baseline, max_peak_increase, max_allocation_increase,
                   max_flops_increase, max_remat_increase, max_peak, device,
                   max_step_time_increase, allow_backend_change)
    report = check_report(result, result.kinds)
    emit(report, fmt, output, force)
    _append_step_summary(report)
    return EXIT_OK if result.passed else EXIT_CHECK_FAILED


def _append_step_summary(report: Report) -> None:
    path = os.environ.get(SUMMARY_VARIABLE)
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as summary:
            summary.write(render(report, "markdown") + "\n")
    except OSError as error:  # the verdict stands; only the summary is lost
        click.echo(f"warning: cannot append to ${SUMMARY_VARIABLE} ({path}): "
                   f"{error.strerror or error}", err=True)
