"""`hloscope build`: compile one model variant for one target into a build folder."""
from __future__ import annotations

from pathlib import Path

import click

from hloscope.api import build_from, build_spec
from hloscope.cli.common import emit
from hloscope.cli.progress import JobProgress, ProgressSettings, build_start_line, progress_options
from hloscope.cli.workload_options import (
    cache_options,
    format_option,
    mesh_options,
    step_model_options,
    target_option,
)
from hloscope.configs.any_config import AnyConfig
from hloscope.configs.policies import POLICY_HELP
from hloscope.configs.step import STEP_POLICY_HELP
from hloscope.configs.targets import Target
from hloscope.errors import EXIT_CHECK_FAILED, EXIT_OK
from hloscope.reports.sweep import build_report
from hloscope.units import format_duration


@click.command("build")
@step_model_options
@mesh_options
@click.option("--policy", default="none", show_default=True, metavar="POLICY",
              help=f"Remat variant: {POLICY_HELP}; {STEP_POLICY_HELP}")
@target_option
@click.option("-o", "--output", "folder", required=True, metavar="DIR",
              type=click.Path(file_okay=False, path_type=Path),
              help="The build folder: manifest, memory/cost analysis, optimized HLO, dump.")
@click.option("--force", is_flag=True, help="Replace DIR if it exists and is not empty.")
@cache_options
@click.option("--timeout", type=click.FloatRange(min=1), default=3600, show_default=True,
              help="Seconds before the compile is abandoned.")
@format_option
@progress_options
def command(model: str | None, step: str | None, config: AnyConfig,
            policy: str, target: Target,
            xla_flags: tuple[str, ...], folder: Path, force: bool, cache_root: Path | None,
            timeout: float, fmt: str, progress: ProgressSettings) -> int:
    """Compile one variant of a built-in transformer train step for TARGET (deviceless for TPU
    and GPU) and write the XLA dump folder, the optimized HLO, memory_analysis / cost_analysis
    JSON and a manifest into DIR. An out-of-memory compile is a result: its error text is in the
    manifest and its dump folder is kept. The build comes from the cache (the one `sweep` uses)
    when the same program was compiled before. Exit status 1 when the variant does not fit or
    did not compile. TPU targets take Cloud TPU accelerator types (tpu:v6e-128) and
    --num-slices for multislice, whose mesh is data parallel across slices (DCN) and FSDP /
    tensor parallel inside each (ICI). Progress goes to stderr (--quiet: none).
    """
    spec = build_spec(model or "", policy, target, config, xla_flags=xla_flags, step=step)
    job = JobProgress(f"compiling {spec.model} / {spec.variant}", quiet=progress.quiet)
    job.line(build_start_line(spec, cache_root))
    with job:
        summary = build_from(spec, folder, force, cache_root, timeout)
    source = "from the cache" if summary.cached else "compiled"
    job.line(f"done in {format_duration(job.elapsed)}: {summary.figures.status}, {source}")
    emit(build_report(summary), fmt, None, False)
    return EXIT_OK if summary.passed else EXIT_CHECK_FAILED
