"""`hloscope trace`: a profiler trace joined to the HLO — time per op, scope, layer and phase,
remat time share, step times, MFU; optionally a Perfetto export and xprof's cross-check."""
from __future__ import annotations

from pathlib import Path

import click

from hloscope.analyses.cost.flops import DEFAULT_SCOPE_DEPTH
from hloscope.analyses.trace.analysis import PEAK_DTYPES
from hloscope.api import trace
from hloscope.cli.common import emit, output_options
from hloscope.reports.trace import BREAKDOWNS, trace_report


@click.command("trace")
@click.argument("source", metavar="TRACE_DIR|FILE.xplane.pb|FILE.trace.json.gz")
@click.option("--hlo", metavar="FILE|DUMP_DIR", default=None,
              help="The HLO of the traced program (text, .gz or XLA dump folder). Default: the "
                   "dump of a `hloscope profile` folder, else the HloProto in the trace.")
@click.option("--module", metavar="NAME|ID", default=None,
              help="The program to analyse (default: the one with the most op time).")
@click.option("--json-trace", is_flag=True,
              help="Read the trace JSON even when an xplane.pb is there (no program ids).")
@click.option("--device", metavar="NAME", default=None,
              help="The device the trace ran on, for its peak FLOP/s (v5e, h100, ...). "
                   "Default: cpu for a host-only trace; unknown for device traces.")
@click.option("--peak-dtype", type=click.Choice(PEAK_DTYPES), default="bf16",
              show_default=True, help="Which peak FLOP/s of the device MFU is against.")
@click.option("--by", type=click.Choice(BREAKDOWNS), default="phase", show_default=True,
              help="The breakdown to show (JSON output holds all four).")
@click.option("--depth", type=click.IntRange(min=1), default=DEFAULT_SCOPE_DEPTH,
              show_default=True, help="Name-stack depth of --by scope.")
@click.option("--top", type=click.IntRange(min=1), default=None, help="Show the N largest rows.")
@click.option("--export", metavar="FILE.json", default=None,
              type=click.Path(dir_okay=False, path_type=Path),
              help="Also write a Perfetto / Chrome trace JSON: live bytes and per-scope time.")
@click.option("--xprof/--no-xprof", default=True, show_default=True,
              help="Show xprof's memory_viewer peak heap when xprof is installed.")
@output_options
def command(source: str, hlo: str | None, module: str | None, json_trace: bool,
            device: str | None, peak_dtype: str, by: str, depth: int, top: int | None,
            export: Path | None, xprof: bool, fmt: str, output: Path | None,
            force: bool) -> None:
    """Read a profiler trace (XSpace, else the trace JSON), join every op event to its HLO
    instruction by (program id, name), and report self time per op, phase, scope and layer,
    the remat time share, per-step times, achieved FLOP/s and, where the device's peak is
    known, MFU and HFU.
    """
    result = trace(source, hlo, module, device, peak_dtype, depth, json_trace, xprof, export,
                   force)
    emit(trace_report(result, by, top), fmt, output, force)
