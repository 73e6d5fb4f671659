"""`hloscope check FILE --baseline B`: a CI gate on memory, FLOPs and remat against a snapshot."""
from __future__ import annotations

import os
from pathlib import Path

import click

from hloscope.analyses.check import Threshold, check, read_snapshot, take_snapshot
from hloscope.analyses.headline import headline
from hloscope.analyses.overview import overview
from hloscope.cli.common import HloInput, emit, hlo_input, output_options
from hloscope.errors import EXIT_OK
from hloscope.reports.check import check_report, snapshot_report
from hloscope.reports.output import write_report
from hloscope.reports.registry import get_format, render
from hloscope.units import parse_bytes, parse_threshold

EXIT_CHECK_FAILED = 1
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
@click.option("--update", is_flag=True, help="Rewrite the baseline with this program's figures.")
@output_options
def command(hlo: HloInput, baseline: Path, max_peak_increase: str | None,
            max_allocation_increase: str | None, max_flops_increase: str | None,
            max_remat_increase: int | None, max_peak: str | None, update: bool, fmt: str,
            output: Path | None, force: bool) -> int:
    """Exit 0 when the program is within the thresholds of the baseline, 1 with a table of the
    violations otherwise. A toolchain that differs from the baseline's is said beside them.
    With $GITHUB_STEP_SUMMARY set, the Markdown report is appended to it.
    """
    thresholds = _thresholds(max_peak_increase, max_allocation_increase, max_flops_increase,
                             max_remat_increase, max_peak)
    item = overview(hlo.load(), Path(hlo.source).name)
    current = take_snapshot(item, hlo.source)
    if update:
        write_report(snapshot_report(current, headline(item)), get_format("json"), baseline,
                     force=True)
        click.echo(f"updated the baseline {baseline}", err=True)
        return EXIT_OK
    result = check(current, read_snapshot(baseline), thresholds)
    report = check_report(result, {m.key: m.kind for m in headline(item)})
    emit(report, fmt, output, force)
    _append_step_summary(report)
    return EXIT_OK if result.passed else EXIT_CHECK_FAILED


def _thresholds(peak: str | None, allocation: str | None, flops: str | None,
                remat: int | None, limit: str | None) -> list[Threshold]:
    thresholds = [_increase(metric, text) for metric, text in
                  (("peak_bytes", peak), ("allocation_bytes", allocation),
                   ("total_flops", flops)) if text is not None]
    if remat is not None:
        thresholds.append(Threshold("remat_instructions", absolute=remat))
    if limit is not None:
        thresholds.append(Threshold("peak_bytes", limit=parse_bytes(limit)))
    return thresholds


def _increase(metric: str, text: str) -> Threshold:
    parsed = parse_threshold(text)
    if parsed.fraction is not None:
        return Threshold(metric, relative=parsed.fraction)
    return Threshold(metric, absolute=parsed.bytes)


def _append_step_summary(report) -> None:
    path = os.environ.get(SUMMARY_VARIABLE)
    if path:
        with open(path, "a", encoding="utf-8") as summary:
            summary.write(render(report, "markdown") + "\n")
