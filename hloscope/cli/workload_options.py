"""Options `build` and `sweep` share: the model (a preset and overrides), the target, the output
format. Collected here, turned into a TransformerConfig by `model_config` (no jax)."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from hloscope.reports.registry import DEFAULT_FORMAT, describe_formats, format_names
from hloscope.workloads.config import DTYPES, TransformerConfig
from hloscope.workloads.presets import preset_config, preset_names
from hloscope.workloads.targets import EXAMPLES

CommandFunction = TypeVar("CommandFunction", bound=Callable[..., Any])

_OVERRIDES = (  # (option, config field, help)
    ("--layers", "n_layers", "Number of layers."),
    ("--d-model", "d_model", "Model width."),
    ("--heads", "n_heads", "Attention heads."),
    ("--kv-heads", "n_kv_heads", "Key/value heads (grouped-query attention)."),
    ("--d-ff", "d_ff", "MLP hidden width."),
    ("--vocab", "vocab", "Vocabulary size."),
    ("--seq", "seq_len", "Sequence length."),
    ("--batch", "batch", "Global batch (sequences per step)."),
    ("--tensor", "tensor_parallel", "Tensor-parallel mesh axis size (the data axis gets the "
                                    "rest of the devices)."),
)


def model_options(command: CommandFunction) -> CommandFunction:
    """--model, the size overrides, dtypes, sharding and layout; passes `config` and `model`."""

    @functools.wraps(command)
    def collected(*args: Any, model: str, param_dtype: str | None, compute_dtype: str | None,
                  fsdp: bool | None, scan: bool | None, **kwargs: Any) -> Any:
        overrides = {field: kwargs.pop(field) for _, field, _ in _OVERRIDES}
        config = model_config(model, param_dtype=param_dtype, compute_dtype=compute_dtype,
                              fsdp=fsdp, scan_layers=scan, **overrides)
        return command(*args, model=model, config=config, **kwargs)

    options = [
        click.option("--scan/--unrolled", "scan", default=None,
                     help="Scan over layers or unroll them (default: the preset's)."),
        click.option("--fsdp/--no-fsdp", default=None,
                     help="Shard parameters and optimizer state over the data axis "
                          "(default: the preset's)."),
        click.option("--compute-dtype", type=click.Choice(DTYPES), default=None,
                     help="Activation dtype (default: the preset's)."),
        click.option("--param-dtype", type=click.Choice(DTYPES), default=None,
                     help="Parameter dtype (default: the preset's)."),
        *[click.option(option, field, type=click.IntRange(min=1), default=None, help=text)
          for option, field, text in reversed(_OVERRIDES)],
        click.option("--model", required=True, type=click.Choice(preset_names()),
                     help="A preset: its published dimensions, overridable below."),
    ]
    for option in options:
        collected = option(collected)
    return collected  # type: ignore[return-value]


def model_config(model: str, **overrides: Any) -> TransformerConfig:
    return preset_config(model, **overrides)


def target_option(command: CommandFunction) -> CommandFunction:
    return click.option("--target", required=True, metavar="TARGET",
                        help=f"Where to compile for, without that hardware: {EXAMPLES}.")(command)


def format_option(command: CommandFunction) -> CommandFunction:
    return click.option("--format", "fmt", default=DEFAULT_FORMAT,
                        type=click.Choice(format_names(), case_sensitive=False),
                        help=f"Report format on standard output: {describe_formats()}.")(command)
