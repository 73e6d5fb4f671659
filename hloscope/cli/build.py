"""`hloscope build`: compile one model variant for one target into a build folder."""
from __future__ import annotations

from pathlib import Path

import click

from hloscope.analyses.summary.variant import variant_figures
from hloscope.cli.common import emit
from hloscope.cli.workload_options import (
    cache_options,
    format_option,
    model_options,
    target_option,
)
from hloscope.errors import EXIT_CHECK_FAILED, EXIT_OK
from hloscope.reports.sweep import build_report
from hloscope.spec.config import TransformerConfig
from hloscope.spec.policies import parse_variant
from hloscope.spec.targets import parse_target
from hloscope.workloads.build import Build, BuildSpec, prepare_folder, run_build
from hloscope.workloads.cache import BuildCache, copy_build


@click.command("build")
@model_options
@click.option("--policy", default="none", show_default=True, metavar="POLICY",
              help="Remat variant: none, full, nothing_saveable, dots_saveable, "
                   "dots_with_no_batch_dims_saveable, save_named, offload_named, nested:B, "
                   "partial:N, optionally +unrolled or +scan.")
@target_option
@click.option("-o", "--output", "folder", required=True, metavar="DIR",
              type=click.Path(file_okay=False, path_type=Path),
              help="The build folder: manifest, memory/cost analysis, optimized HLO, dump.")
@click.option("--force", is_flag=True, help="Replace DIR if it exists and is not empty.")
@cache_options
@click.option("--timeout", type=click.FloatRange(min=1), default=3600, show_default=True,
              help="Seconds before the compile is abandoned.")
@format_option
def command(model: str, config: TransformerConfig, policy: str, target: str, folder: Path,
            force: bool, cache_root: Path | None, timeout: float, fmt: str) -> int:
    """Compile one variant of a built-in transformer train step for TARGET (deviceless for TPU
    and GPU) and write the XLA dump folder, the optimized HLO, memory_analysis / cost_analysis
    JSON and a manifest into DIR. An out-of-memory compile is a result: its error text is in the
    manifest and its dump folder is kept. The build comes from the cache (the one `sweep` uses)
    when the same program was compiled before. Exit status 1 when the variant does not fit or
    did not compile.
    """
    spec_target = parse_target(target).spec
    variant = parse_variant(policy, config)
    spec = BuildSpec(model, variant.name, spec_target, variant.apply(config))
    prepare_folder(folder, force)
    build, cached = _build(spec, folder, cache_root, timeout)
    figures = variant_figures(build, variant.name)
    emit(build_report(build, figures, cached), fmt, None, False)
    return EXIT_OK if figures.status == "ok" and figures.fits is not False else EXIT_CHECK_FAILED


def _build(spec: BuildSpec, folder: Path, cache_root: Path | None,
           timeout: float) -> tuple[Build, bool]:
    """(the build in `folder`, True when it came from the cache)."""
    if cache_root is None:
        return run_build(spec, folder, timeout), False
    build, cached = BuildCache(cache_root).build(spec, timeout)
    return copy_build(build, folder), cached
