"""`hloscope oom`: why a program runs out of memory, and what would make it fit."""
from __future__ import annotations

from pathlib import Path

import click

from hloscope.cli.common import emit, lenient_option, output_options
from hloscope.configs.step import STEP_POLICY_HELP
from hloscope.devices import check_device_or_capacity
from hloscope.errors import EXIT_CHECK_FAILED, EXIT_OK
from hloscope.units import parse_bytes


@click.command("oom")
@click.argument("source", metavar="HLO|DUMP_DIR|BUILD_DIR", required=False)
@click.option("--step", default=None, metavar="FILE.py:FUNCTION",
              help="Instead of SOURCE: your own train step's factory (as `sweep --step`), "
                   "compiled at --policy for --target; its remedies come from compiling the "
                   "--candidates (the closed forms are the built-in model's).")
@click.option("--target", default=None, metavar="TARGET", help="With --step: where to compile.")
@click.option("--policy", default="none", show_default=True,
              help="With --step: the remat variant diagnosed.")
@click.option("--candidates", default="all", show_default=True, metavar="LIST",
              help=f"With --step: the remat variants compiled as remedies ({STEP_POLICY_HELP})")
@click.option("--batch", type=click.IntRange(min=1), default=None,
              help="With --step: remat.batch for the factory.")
@click.option("--seq", type=click.IntRange(min=1), default=None,
              help="With --step: remat.seq_len for the factory.")
@click.option("--module", metavar="NAME", default=None,
              help="In a dump folder or multi-module file, read this module.")
@click.option("--log", "log_path", metavar="FILE", default=None,
              type=click.Path(dir_okay=False, path_type=Path),
              help="A compile log or error text: TPU RESOURCE_EXHAUSTED messages, XLA's remat "
                   "warnings, 'Out of memory while trying to allocate'.")
@click.option("--device", metavar="NAME", default=None,
              help="Judge against this device's memory (v5e, v6e, v5p, v4, tpu7x, h100, a100, "
                   "...); GPUs: JAX's default 75% share.")
@click.option("--capacity", metavar="SIZE", default=None,
              help="Judge against this many bytes per device (e.g. 16GiB).")
@click.option("--sweep", "sweep_dir", metavar="DIR", default=None,
              type=click.Path(path_type=Path),
              help="A `hloscope sweep -o DIR` folder: its compiled variants beside the "
                   "predictions.")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True,
              help="Show the N largest groups live at the peak.")
@lenient_option
@output_options
def command(source: str | None, step: str | None, target: str | None, policy: str,
            candidates: str, batch: int | None, seq: int | None, module: str | None,
            log_path: Path | None, device: str | None, capacity: str | None,
            sweep_dir: Path | None, top: int, lenient: bool, fmt: str, output: Path | None,
            force: bool) -> int:
    """Explain why a program does (or does not) fit one device: the verdict on XLA's allocation
    (the live peak, labelled an estimate, without XLA's data), what is live at the peak by
    category and layer, where the peak happens, sharding findings, and remedies with their
    predicted peak and extra FLOPs. A `hloscope build` folder adds the model config (remedies).
    Exit status 1 when it does not fit. With --step, your own train step is compiled (as
    `sweep --step` does) and its remedies are the compiled --candidates.
    """
    from hloscope.api import oom, oom_step
    from hloscope.loader.program import load_program
    from hloscope.reports.oom import oom_report

    check_device_or_capacity(device, capacity, options=True)
    if (source is None) == (step is None):
        raise click.UsageError("give SOURCE (an HLO file, dump or build folder) or --step")
    if step is not None:
        if target is None or sweep_dir is not None or log_path is not None or module:
            raise click.UsageError("--step takes --target (required), not --sweep/--log/"
                                   "--module: it compiles its own")
        given = None if capacity is None else parse_bytes(capacity)
        diagnosis = oom_step(step, target, policy, candidates, device, given, top,
                             batch=batch, seq_len=seq)
        emit(oom_report(diagnosis), fmt, output, force)
        return EXIT_CHECK_FAILED if diagnosis.fits is False else EXIT_OK
    assert source is not None
    program = load_program("-" if source == "-" else Path(source), module, log_path,
                           lenient)
    given = None if capacity is None else parse_bytes(capacity)
    diagnosis = oom(program, device, given, sweep=sweep_dir, top=top)
    emit(oom_report(diagnosis), fmt, output, force)
    return EXIT_CHECK_FAILED if diagnosis.fits is False else EXIT_OK
