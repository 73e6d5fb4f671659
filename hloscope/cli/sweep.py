"""`hloscope sweep`: compile remat variants, rank them, name the fastest that fits."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from hloscope.api import run_sweep, sweep_request
from hloscope.cli.common import emit
from hloscope.cli.progress import (
    ProgressSettings,
    SweepProgress,
    progress_options,
    sweep_start_line,
)
from hloscope.cli.workload_options import (
    cache_options,
    executor_options,
    format_option,
    grid_model_options,
    mesh_options,
    target_option,
)
from hloscope.configs.any_config import AnyConfig
from hloscope.configs.policies import POLICY_HELP
from hloscope.configs.step import STEP_POLICY_HELP
from hloscope.configs.targets import Target
from hloscope.errors import EXIT_CHECK_FAILED, EXIT_OK
from hloscope.formats.sweep import SWEEP_FILE
from hloscope.reports.sweep import sweep_report
from hloscope.sweeps.core import SweepRequest, SweepResult, validate
from hloscope.sweeps.executors import LOCAL_SLOTS, ExecutorSpec
from hloscope.sweeps.grid import Grid
from hloscope.sweeps.measure import MEASURED_FOLDER, measurable_platform
from hloscope.sweeps.scheduler import DEFAULT_RETRIES
from hloscope.sweeps.search import DEFAULT_MAX_PROBES, DEFAULT_WINDOW
from hloscope.units import parse_bytes


@click.command("sweep")
@grid_model_options
@mesh_options
@click.option("--policies", default="all", show_default=True, metavar="LIST",
              help=f"Comma-separated remat variants, or all (every family once): "
                   f"{POLICY_HELP}; {STEP_POLICY_HELP}")
@target_option
@click.option("--search", type=click.Choice(["batch", "frontier"]), default=None,
              help="batch: find each variant's largest global batch that fits: double, bisect, "
                   "then compile the steps just above the boundary (fit is not monotonic in "
                   "batch). frontier: per --batch, the fastest per-tensor names: policy that "
                   "fits, predicted from compiled `full` baselines and confirmed by compiling "
                   "the predicted winners and the candidates next to the capacity (--policies "
                   "is not used; writes frontier.json).")
@click.option("--capacity", metavar="SIZE", default=None,
              help="--search frontier: device memory per device (e.g. 16GiB; default: the "
                   "target device's).")
@click.option("--names", "names", metavar="LIST", default=None,
              help="--search frontier: vary only these block names (e.g. qkv,attn_out,"
                   "mlp_hidden; the others are recomputed; default: every residual name; "
                   "`hloscope policies --model M` lists them).")
@click.option("--choices", "choices", metavar="LIST", default=None,
              help="--search frontier: the choices each name may take (default: "
                   "device,offload,remat).")
@click.option("--plot", "plot", metavar="FILE", default=None,
              type=click.Path(dir_okay=False, path_type=Path),
              help="--search frontier: draw the frontier to FILE (.png, .svg or .pdf).")
@click.option("--max-batch", type=click.IntRange(min=1), default=1 << 16, show_default=True,
              help="Upper limit of --search batch.")
@click.option("--search-window", type=click.IntRange(min=1), default=DEFAULT_WINDOW,
              show_default=True, metavar="N",
              help="--search batch: the N steps above the answer must all be compiled and fail.")
@click.option("--max-probes", type=click.IntRange(min=1), default=DEFAULT_MAX_PROBES,
              show_default=True, metavar="N",
              help="--search batch: at most N compiles per variant (a note says when this "
                   "stopped a search).")
@executor_options
@click.option("--jobs", type=click.IntRange(min=1), default=None,
              help=f"Compiles at once (default: {LOCAL_SLOTS} locally — a TPU compile takes "
                   "~2 GB — or the Ray cluster's CPUs).")
@click.option("--retries", type=click.IntRange(min=0), default=DEFAULT_RETRIES,
              show_default=True, help="Times a compile whose worker died is tried again.")
@click.option("-o", "--output", "folder", default=None, metavar="DIR",
              type=click.Path(file_okay=False, path_type=Path),
              help=f"Write {SWEEP_FILE} and every variant's build folder into DIR.")
@click.option("--force", is_flag=True, help="Replace DIR if it exists and is not empty.")
@click.option("--measure", "measure", type=click.IntRange(min=1), default=None, metavar="K",
              help="Run the K fastest predicted variants that fit on the target's own devices "
                   "(the local CPU, or a GPU or TPU here; a one-device target) and rank them by "
                   "the measured step; predicted and measured side by side.")
@click.option("--measure-steps", type=click.IntRange(min=2), default=3, show_default=True,
              help="--measure: train steps traced per variant (the median ranks).")
@cache_options
@click.option("--timeout", type=click.FloatRange(min=1), default=3600, show_default=True,
              help="Seconds before one compile is abandoned.")
@format_option
@progress_options
def command(model: str | None, step: str | None, config: AnyConfig,
            grid: Grid, policies: str, target: Target,
            xla_flags: tuple[str, ...], search: str | None, max_batch: int,
            search_window: int, max_probes: int, capacity: str | None,
            names: str | None, choices: str | None, plot: Path | None,
            executor: ExecutorSpec, jobs: int | None,
            retries: int, folder: Path | None, force: bool, measure: int | None,
            measure_steps: int, cache_root: Path | None,
            timeout: float, fmt: str, progress: ProgressSettings) -> int:
    """Compile remat variants of a built-in transformer for TARGET in worker processes (or Ray
    tasks), and rank them: fit (libtpu's verdict on TPU; the allocation against device memory
    on GPU), memory, compile time, FLOPs, recompute overhead and a roofline step-time estimate.
    Several --batch / --seq values sweep every combination. The winner is the fastest variant
    that fits; every other row says why it lost. Builds are cached by content, so a repeated
    (or interrupted) sweep compiles only what is missing. Exit status 1 when nothing fits.
    Progress goes to stderr: a start line, each compile as it ends, a summary (--quiet: none).
    With --step FILE.py:make_step the variants are of your own train step
    (docs/own-model.md).
    """
    if search != "frontier" and (names is not None or choices is not None or plot is not None):
        raise click.UsageError("--names, --choices and --plot go with --search frontier")
    if measure is not None and search is not None:
        raise click.UsageError("--measure ranks a sweep of fixed batches; it does not go with "
                               "--search")
    request = sweep_request(
        model=model or "", policies=policies, target=target, output=folder, config=config,
        grid=grid, search=search, max_batch=max_batch, search_window=search_window,
        max_probes=max_probes, capacity=None if capacity is None else parse_bytes(capacity),
        names=names, choices=choices, measure=measure or 0, measure_steps=measure_steps,
        executor=executor, jobs=jobs, retries=retries, cache=cache_root, timeout=timeout,
        xla_flags=xla_flags, step=step)
    if request.frontier is not None:
        return _frontier(request, force, fmt, plot)
    validate(request)  # a bad request is refused before the start line
    if measure is not None:
        measurable_platform(request)
    listener = SweepProgress(len(request.cases()), quiet=progress.quiet)
    listener.start(sweep_start_line(request))
    try:
        result = run_sweep(request, force, listener,
                           None if progress.quiet else _measuring(measure_steps))
    finally:
        listener.close()
    assert isinstance(result, SweepResult)
    listener.summary(result.wall_seconds)
    emit(sweep_report(result), fmt, None, False)
    return EXIT_OK if result.winner is not None else EXIT_CHECK_FAILED


def _measuring(steps: int) -> Callable[[int, Path, str], None]:
    """The line said before the measured runs."""

    def say(count: int, folder: Path, platform: str) -> None:
        click.echo(f"measuring {count} variant(s) on {platform}, {steps} traced steps each, "
                   f"into {folder / MEASURED_FOLDER}", err=True)

    return say


def _frontier(request: SweepRequest, force: bool, fmt: str, plot: Path | None) -> int:
    from hloscope.reports.frontier import frontier_report
    from hloscope.reports.renderers.plot import check_plot_path
    from hloscope.sweeps.frontier import FrontierResult

    if plot is not None:
        check_plot_path(plot)  # before any compile
    result = run_sweep(request, force)
    assert isinstance(result, FrontierResult)
    if plot is not None:
        from hloscope.reports.renderers.frontier_plot import plot_frontier

        plot_frontier(result.to_dict(), plot)
    emit(frontier_report(result), fmt, None, False)
    return EXIT_OK if any(result.winners.values()) else EXIT_CHECK_FAILED
