"""`hloscope policies`: the named tensors a per-tensor remat policy chooses for (no compile)."""
from __future__ import annotations

from pathlib import Path

import click

from hloscope.api import policies, step_policies
from hloscope.cli.common import emit, output_options
from hloscope.cli.workload_options import step_model_options
from hloscope.configs.any_config import AnyConfig
from hloscope.configs.config import TransformerConfig
from hloscope.configs.step import StepConfig
from hloscope.configs.targets import EXAMPLES, parse_target
from hloscope.reports.policies import policies_report, step_policies_report


@click.command("policies")
@step_model_options
@click.option("--target", default=None, metavar="TARGET",
              help=f"The mesh the per-device figures are for ({EXAMPLES}); default: one "
                   "device (with --step: the target the step is traced for, default cpu).")
@click.option("--num-slices", type=click.IntRange(min=1), default=None, metavar="N",
              help="TPU multislice: N slices of the topology.")
@output_options
def command(model: str | None, step: str | None, config: AnyConfig,
            target: str | None, num_slices: int | None, fmt: str, output: Path | None,
            force: bool) -> None:
    """List the named tensors of the model's block -- what `names:NAME=device|offload|remat`
    chooses for -- with shape and bytes per layer on one device, and the policy families.
    With --step, your step's own checkpoint_names, traced (no compile), with their traced
    shape, bytes and the line that named them."""
    if step is not None:
        assert isinstance(config, StepConfig)
        traced = step_policies(step, parse_target(target or "cpu", num_slices), config=config)
        emit(step_policies_report(traced), fmt, output, force)
        return
    assert model is not None and isinstance(config, TransformerConfig)
    parsed = None if target is None else parse_target(target, num_slices)
    result = policies(model, parsed, config=config)
    emit(policies_report(result), fmt, output, force)
