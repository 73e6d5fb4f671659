"""`hloscope sweep`: compile remat variants, rank them, name the fastest that fits."""
from __future__ import annotations

from pathlib import Path

import click

from hloscope.cli.common import emit
from hloscope.cli.progress import SweepProgress
from hloscope.cli.workload_options import format_option, model_options, target_option
from hloscope.errors import EXIT_CHECK_FAILED, EXIT_OK
from hloscope.reports.registry import render
from hloscope.reports.sweep import sweep_report
from hloscope.workloads.build import prepare_folder
from hloscope.workloads.cache import default_cache_dir
from hloscope.workloads.config import TransformerConfig
from hloscope.workloads.policies import parse_variants
from hloscope.workloads.sweep import DEFAULT_JOBS, SweepRequest, run_sweep
from hloscope.workloads.targets import parse_target

SWEEP_FILE = "sweep.json"


@click.command("sweep")
@model_options
@click.option("--policies", default="all", show_default=True, metavar="LIST",
              help="Comma-separated remat variants (see `hloscope build --help`), or all.")
@target_option
@click.option("--search", type=click.Choice(["batch"]), default=None,
              help="Find each variant's largest global batch that fits (by bisection).")
@click.option("--max-batch", type=click.IntRange(min=1), default=1 << 16, show_default=True,
              help="Upper limit of --search batch.")
@click.option("--jobs", type=click.IntRange(min=1), default=DEFAULT_JOBS, show_default=True,
              help="Compiles at once (a TPU compile takes ~2 GB of memory).")
@click.option("-o", "--output", "folder", default=None, metavar="DIR",
              type=click.Path(file_okay=False, path_type=Path),
              help=f"Write {SWEEP_FILE} and every variant's build folder into DIR.")
@click.option("--force", is_flag=True, help="Replace DIR if it exists and is not empty.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where compiled builds are cached (default $HLOSCOPE_CACHE_DIR or "
                   "~/.cache/hloscope).")
@click.option("--no-cache", is_flag=True, help="Compile everything again; cache nothing.")
@click.option("--timeout", type=click.FloatRange(min=1), default=3600, show_default=True,
              help="Seconds before one compile is abandoned.")
@format_option
def command(model: str, config: TransformerConfig, policies: str, target: str,
            search: str | None, max_batch: int, jobs: int, folder: Path | None, force: bool,
            cache_dir: Path | None, no_cache: bool, timeout: float, fmt: str) -> int:
    """Compile remat variants of a built-in transformer for TARGET in worker processes, and rank
    them: fit (libtpu's verdict on TPU; the allocation against device memory on GPU), memory,
    compile time, FLOPs, recompute overhead and a roofline step-time estimate. The winner is
    the fastest variant that fits; every other variant's row says why it lost. Builds are cached
    by content, so a repeated sweep compiles only what changed. Exit status 1 when nothing fits.
    """
    request = SweepRequest(
        model=model, base=config, variants=tuple(parse_variants(policies, config)),
        target=parse_target(target).spec, jobs=jobs, search_batch=search == "batch",
        max_batch=max_batch, cache_root=None if no_cache else cache_dir or default_cache_dir(),
        out_dir=folder, timeout=timeout)
    if folder is not None:
        prepare_folder(folder, force)
    progress = SweepProgress(len(request.variants))
    try:
        result = run_sweep(request, progress)
    finally:
        progress.close()
    report = sweep_report(result)
    if folder is not None:
        (folder / SWEEP_FILE).write_text(render(report, "json"))
    emit(report, fmt, None, False)
    return EXIT_OK if result.winner is not None else EXIT_CHECK_FAILED
