"""`hloscope profile`: run a model variant's train step on the local device under the profiler,
then report the trace as `hloscope trace` does."""
from __future__ import annotations

from pathlib import Path

import click

from hloscope.api import profile
from hloscope.cli.common import emit
from hloscope.cli.progress import JobProgress, ProgressSettings, progress_options
from hloscope.cli.workload_options import format_option, model_options
from hloscope.configs.config import TransformerConfig
from hloscope.optional import require_compiler
from hloscope.reports.trace import trace_report
from hloscope.units import format_duration


@click.command("profile")
@model_options
@click.option("--policy", default="none", show_default=True, metavar="POLICY",
              help="Remat variant, as `hloscope build --policy` takes it (none, full, "
                   "dots_saveable, nested:B, partial:N, ... optionally +unrolled or +scan).")
@click.option("--steps", type=click.IntRange(min=1), default=2, show_default=True,
              help="Steps to run under the profiler (after one warm-up step).")
@click.option("--platform", type=click.Choice(("cpu", "gpu", "tpu")), default="cpu",
              show_default=True, help="The local device to run on (JAX_PLATFORMS).")
@click.option("-o", "--output", "folder", required=True, metavar="DIR",
              type=click.Path(file_okay=False, path_type=Path),
              help="The profile folder: trace/, dump/, profile.json, profile.log.")
@click.option("--force", is_flag=True, help="Replace DIR if it exists and is not empty.")
@click.option("--timeout", type=click.FloatRange(min=1), default=1800, show_default=True,
              help="Seconds before the run is abandoned.")
@format_option
@progress_options
def command(model: str, config: TransformerConfig, policy: str, steps: int, platform: str,
            folder: Path, force: bool, timeout: float, fmt: str,
            progress: ProgressSettings) -> None:
    """Run STEPS train steps of a built-in transformer variant with real (small) arrays on the
    local device under jax.profiler.trace, in a child process; write the trace and XLA's dump
    of the program into DIR, and print what `hloscope trace DIR` prints. Progress goes to
    stderr (--quiet: none).
    """
    require_compiler(platform, f"profiling on {platform}")
    job = JobProgress(f"profiling {model} / {policy}", quiet=progress.quiet)
    job.line(f"profiling {model} / {policy} on the local {platform} in a child process: compile, "
             f"1 warm-up step, then {steps} step{'s' if steps != 1 else ''} under the profiler")
    with job:
        result = profile(folder, model, policy, steps, platform, force, timeout, config=config)
    job.line(f"done in {format_duration(job.elapsed)}: trace in {folder}")
    emit(trace_report(result), fmt, None, False)
