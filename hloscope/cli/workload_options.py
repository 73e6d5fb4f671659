"""Options `build` and `sweep` share: the model (a preset and overrides), the target (with its
slices and XLA flags), the multislice mesh, the cache, the output format; and the sweep's own:
grids (`--batch 8,16 --seq 2048,4096`) and where its compiles run (`--executor local|ray`).
Collected here, turned into a TransformerConfig by `model_config` (no jax)."""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from hloscope.configs.config import ATTENTIONS, DTYPES, LOSSES, TransformerConfig
from hloscope.configs.mesh import MESH_EXAMPLE, mesh_config_values, parse_mesh_text
from hloscope.configs.presets import preset_config, preset_names
from hloscope.configs.step import StepConfig
from hloscope.configs.targets import EXAMPLES, parse_target
from hloscope.reports.registry import DEFAULT_FORMAT, describe_formats, format_names
from hloscope.sweeps.executor_base import EXECUTORS, ExecutorSpec
from hloscope.sweeps.grid import Grid, parse_int_list
from hloscope.workloads.cache import default_cache_dir

CommandFunction = TypeVar("CommandFunction", bound=Callable[..., Any])
Rewrapped = Callable[..., Any]
"""A command function wrapped by a decorator that takes other keywords than it passes on (the
options it adds in, the values it makes out): not the type it was given."""

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


_GRID_OPTIONS = {"seq_len": "--seq", "batch": "--batch"}  # config field -> option


def model_options(command: Callable[..., Any]) -> Rewrapped:
    """--model, the size overrides, dtypes, sharding and layout; passes `config` and `model`."""
    return _model_options(command, grid=False)


def step_model_options(command: Callable[..., Any]) -> Rewrapped:
    """model_options with --step (a user's factory instead of --model); passes `step` too."""
    return _model_options(command, grid=False, step=True)


def grid_model_options(command: Callable[..., Any]) -> Rewrapped:
    """model_options whose --seq and --batch take comma-separated lists; also passes `grid`
    (and takes --step)."""
    return _model_options(command, grid=True, step=True)


def _model_options(command: Callable[..., Any], grid: bool, step: bool = False) -> Rewrapped:
    @functools.wraps(command)
    def collected(*args: Any, model: str | None, param_dtype: str | None,
                  compute_dtype: str | None, fsdp: bool | None, scan: bool | None,
                  **kwargs: Any) -> Any:
        overrides = {field: kwargs.pop(field) for _, field, _ in _OVERRIDES}
        overrides.update({field: kwargs.pop(field) for field in _MEMORY_FIELDS})
        lists = _grid_lists(overrides) if grid else {}
        if model is not None and kwargs.get("step") is not None:
            raise click.UsageError("--model and --step: give one of them")
        if model is None and not step:
            raise click.UsageError("missing option --model")
        if model is None:
            return _step_command(command, args, kwargs, overrides, lists, grid,
                                 {"--param-dtype": param_dtype, "--fsdp/--no-fsdp": fsdp,
                                  "--scan/--unrolled": scan}, compute_dtype)
        config = model_config(model, param_dtype=param_dtype, compute_dtype=compute_dtype,
                              fsdp=fsdp, scan_layers=scan, **overrides)
        if grid:
            kwargs["grid"] = Grid(lists.get("seq_len") or (config.seq_len,),
                                  lists.get("batch") or (config.batch,))
        return command(*args, model=model, config=config, **kwargs)

    step_options = [] if not step else [
        click.option("--step", "step", default=None, metavar="FILE.py:FUNCTION",
                     help="Your own train step instead of a preset: a factory make_step(remat"
                          "[, layers]) returning (step_fn, args[, jit_kwargs]), as FILE.py:name "
                          "or module:name (docs/own-model.md). --batch/--seq/--mesh/"
                          "--tensor/--compute-dtype reach it as remat.batch, remat.seq_len, "
                          "remat.mesh.")]
    options = [
        *_memory_options(),
        click.option("--scan/--unrolled", "scan", default=None,
                     help="Scan over layers or unroll them (default: the preset's)."),
        click.option("--fsdp/--no-fsdp", default=None,
                     help="Shard parameters and optimizer state over the data axis "
                          "(default: the preset's)."),
        click.option("--compute-dtype", type=click.Choice(DTYPES), default=None,
                     help="Activation dtype (default: the preset's)."),
        click.option("--param-dtype", type=click.Choice(DTYPES), default=None,
                     help="Parameter dtype (default: the preset's)."),
        *[_size_option(option, field, text, grid) for option, field, text in reversed(_OVERRIDES)],
        *step_options,
        click.option("--model", default=None, type=click.Choice(preset_names()),
                     help="A preset: its published dimensions, overridable below"
                          + (" (or --step)." if step else ".")),
    ]
    for option in options:
        collected = option(collected)
    return collected


# Memory-efficient model options (issue 16): attention, loss, gradient accumulation.
_MEMORY_FIELDS = ("attention", "attention_q_block", "attention_kv_block", "loss", "loss_chunk",
                  "micro_batches", "optimizer_offload")


def _memory_options() -> list[Callable[[Any], Any]]:
    """--attention, its block sizes, --loss, --loss-chunk, --micro-batches,
    --optimizer-offload (preset defaults)."""
    size = click.IntRange(min=1)
    return [
        click.option("--optimizer-offload/--no-optimizer-offload", "optimizer_offload",
                     default=None,
                     help="Keep the fp32 master weights and AdamW moments in pinned host "
                          "memory, moved to the device for the update (MaxText's "
                          "optimizer_memory_host_offload) (default: off)."),
        click.option("--micro-batches", "micro_batches", type=size, default=None, metavar="K",
                     help="Gradient accumulation: a scan over K micro-batches, one optimizer "
                          "update; K must divide each data-parallel shard's batch (default 1)."),
        click.option("--loss-chunk", "loss_chunk", type=size, default=None, metavar="N",
                     help="Positions per chunk of the blockwise loss; must divide --seq "
                          "(default gcd(1024, seq))."),
        click.option("--loss", "loss", type=click.Choice(LOSSES), default=None,
                     help="Cross-entropy: plain (full [b, s, vocab] logits) or blockwise "
                          "(chunks over the sequence) (default: the preset's)."),
        click.option("--attention-kv-block", "attention_kv_block", type=size, default=None,
                     metavar="N", help="Key/value block of blockwise/splash attention; must "
                                       "divide --seq (default gcd(512, seq))."),
        click.option("--attention-q-block", "attention_q_block", type=size, default=None,
                     metavar="N", help="Query block of blockwise/splash attention; must divide "
                                       "--seq (default gcd(512, seq))."),
        click.option("--attention", "attention", type=click.Choice(ATTENTIONS), default=None,
                     help="plain ([b, h, s, s] scores), blockwise (flash-style, pure JAX, every "
                          "target) or splash (Pallas TPU kernel) (default: the preset's)."),
    ]


def _grid_lists(overrides: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """Parses the grid options' lists; the config gets each list's first value."""
    lists = {field: parse_int_list(overrides[field], option)
             for field, option in _GRID_OPTIONS.items() if overrides[field] is not None}
    overrides.update({field: values[0] for field, values in lists.items()})
    return lists


def _size_option(option: str, field: str, text: str, grid: bool) -> Callable[[Any], Any]:
    if grid and field in _GRID_OPTIONS:
        return click.option(option, field, default=None, metavar="N[,N...]",
                            help=f"{text} Several values, comma-separated, sweep a grid.")
    return click.option(option, field, type=click.IntRange(min=1), default=None, help=text)


_STEP_FIELDS = ("batch", "seq_len", "tensor_parallel")  # options a user's step takes


def _step_command(command: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                  overrides: dict[str, Any], lists: dict[str, tuple[int, ...]], grid: bool,
                  model_only: dict[str, Any], compute_dtype: str | None) -> Any:
    """`--step` instead of `--model`: a StepConfig carries the options a step takes (the grid
    point, the mesh, the compute dtype); the built-in model's options are refused."""
    if kwargs.get("step") is None:
        raise click.UsageError("give --model (a preset) or --step FILE.py:make_step")
    options = {field: option for option, field, _ in _OVERRIDES}
    given = [options.get(field, "--" + field.replace("_", "-"))
             for field, value in overrides.items()
             if value is not None and field not in _STEP_FIELDS]
    given += [option for option, value in model_only.items() if value is not None]
    if given:
        raise click.UsageError(f"{given[0]} describes the built-in model; with --step your "
                               "factory builds the model")
    values = {field: overrides[field] for field in _STEP_FIELDS if overrides[field] is not None}
    carrier = StepConfig("", "", compute_dtype=compute_dtype or "bfloat16", **values)
    if grid:
        kwargs["grid"] = Grid(lists.get("seq_len") or (carrier.seq_len,),
                              lists.get("batch") or (carrier.batch,))
    return command(*args, model=None, config=carrier, **kwargs)


def model_config(model: str, **overrides: Any) -> TransformerConfig:
    return preset_config(model, **overrides)


def target_option(command: Callable[..., Any]) -> Rewrapped:
    """--target with the multislice and flag options (--num-slices, --allow-any-topology,
    --xla-flag); passes `target` (a `Target`, parsed here once, slices included) and
    `xla_flags`."""

    @functools.wraps(command)
    def collected(*args: Any, target: str, num_slices: int | None, allow_any_topology: bool,
                  xla_flag: tuple[str, ...], **kwargs: Any) -> Any:
        parsed = parse_target(target, num_slices, allow_any_topology)
        return command(*args, target=parsed, xla_flags=tuple(xla_flag), **kwargs)

    options = [
        click.option("--xla-flag", "xla_flag", multiple=True, metavar="FLAG",
                     help="An XLA / libtpu flag for the compile (repeatable), e.g. "
                     "--xla-flag=--xla_tpu_enable_latency_hiding_scheduler=true; on TPU it goes "
                     "to LIBTPU_INIT_ARGS, elsewhere to XLA_FLAGS. Those already in the "
                     "environment apply too; all are recorded in the build and its cache key."),
        click.option("--allow-any-topology", is_flag=True,
                     help="Compile for a TPU chip grid that is no Cloud TPU slice of its "
                     "generation (refused otherwise); the output says so."),
        click.option("--num-slices", type=click.IntRange(min=1), default=None, metavar="N",
                     help="TPU multislice: N slices of the topology joined by DCN (as xpk's "
                     "--num-slices, MaxText's compile_topology_num_slices)."),
        click.option("--target", required=True, metavar="TARGET",
                     help=f"Where to compile for, without that hardware: {EXAMPLES}."),
    ]
    for option in options:
        collected = option(collected)
    return collected


# --- the multislice mesh (MaxText's names): build and sweep ---------------------------------
_MESH_OPTIONS = (  # (option, parameter, help): config fields, but the last is tensor_parallel
    ("--dcn-data-parallelism", "dcn_data_parallel",
     "Data-parallel ways across slices, over DCN (default: the number of slices)."),
    ("--ici-fsdp-parallelism", "ici_fsdp_parallel",
     "FSDP ways inside a slice, over ICI (default: every device of a slice tensor parallelism "
     "leaves when the model shards (--fsdp), else 1); the rest is ICI data parallelism."),
    ("--ici-tensor-parallelism", "ici_tensor_parallel",
     "Tensor-parallel ways inside a slice, over ICI (the same as --tensor)."),
)


def mesh_options(command: Callable[..., Any]) -> Rewrapped:
    """The mesh options; applied to the `config` that model_options passes (put it below, and
    above target_option: `--mesh` is checked against the target's devices)."""

    @functools.wraps(command)
    def collected(*args: Any, config: TransformerConfig, mesh: str | None, **kwargs: Any) -> Any:
        stated = {name: kwargs.pop(name) for _, name, _ in _MESH_OPTIONS}
        stated = {name: value for name, value in stated.items() if value is not None}
        if mesh is not None:
            if stated:
                raise click.UsageError(
                    "--mesh and --dcn-data-parallelism / --ici-fsdp-parallelism / "
                    "--ici-tensor-parallelism say the same thing: give one of them")
            stated = _mesh_text_values(mesh, kwargs)
        tensor = stated.pop("ici_tensor_parallel", None)
        if tensor is not None and config.tensor_parallel not in (1, tensor):
            raise click.UsageError(f"--tensor {config.tensor_parallel} and "
                                   f"--ici-tensor-parallelism {tensor} disagree")
        if tensor is not None:
            stated["tensor_parallel"] = tensor
        if stated:
            config = dataclasses.replace(config, **stated)
        return command(*args, config=config, **kwargs)

    for option, field, text in reversed(_MESH_OPTIONS):
        collected = click.option(option, field, type=click.IntRange(min=1), default=None,
                                 metavar="N", help=text)(collected)
    collected = click.option(
        "--mesh", default=None, metavar="AXIS=N,...",
        help=f"The mesh in one string, e.g. {MESH_EXAMPLE}: dcn_data (data) across slices, "
             "fsdp, tensor and ici_data inside one; unstated, dcn_data is the number of "
             "slices, fsdp and tensor 1, ici_data the rest; the sizes must multiply to the "
             "target's devices. Instead of the three options below.")(collected)
    return collected


def _mesh_text_values(text: str, kwargs: dict[str, Any]) -> dict[str, int]:
    """`--mesh` as the mesh options' values, checked against the target the command got."""
    target = parse_target(kwargs["target"], kwargs.get("num_slices"),
                          kwargs.get("allow_any_topology", False))
    values = mesh_config_values(parse_mesh_text(text), target.num_slices,
                                target.devices_per_slice)
    return {"dcn_data_parallel": values["dcn_data_parallel"],
            "ici_fsdp_parallel": values["ici_fsdp_parallel"],
            "ici_tensor_parallel": values["tensor_parallel"]}


def format_option(command: CommandFunction) -> CommandFunction:
    from hloscope.cli.common import wide_option

    return wide_option(click.option(
        "--format", "fmt", default=DEFAULT_FORMAT,
        type=click.Choice(format_names(), case_sensitive=False),
        help=f"Report format on standard output: {describe_formats()}.")(command))


def cache_options(command: Callable[..., Any]) -> Rewrapped:
    """--cache-dir and --no-cache; passes `cache_root` (None: no cache)."""

    @functools.wraps(command)
    def collected(*args: Any, cache_dir: Path | None, no_cache: bool, **kwargs: Any) -> Any:
        root = None if no_cache else cache_dir or default_cache_dir()
        return command(*args, cache_root=root, **kwargs)

    options = [
        click.option("--no-cache", is_flag=True, help="Compile again; cache nothing."),
        click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
                     default=None, help="Where compiled builds are cached, shareable by many "
                     "workers (default $HLOSCOPE_CACHE_DIR or ~/.cache/hloscope)."),
    ]
    for option in options:
        collected = option(collected)
    return collected


def executor_options(command: Callable[..., Any]) -> Rewrapped:
    """--executor, --address, --task-memory; passes `executor` (an ExecutorSpec)."""

    @functools.wraps(command)
    def collected(*args: Any, executor: str, address: str | None, task_memory: float | None,
                  **kwargs: Any) -> Any:
        if executor == "local" and (address or task_memory):
            raise click.UsageError("--address and --task-memory need --executor ray")
        spec = ExecutorSpec(executor, address, task_memory)
        return command(*args, executor=spec, **kwargs)

    options = [
        click.option("--task-memory", type=click.FloatRange(min=0.1), default=None,
                     metavar="GIB", help="Ray: memory declared per compile (default by target: "
                     "cpu 1, gpu 2, tpu 3 GiB)."),
        click.option("--address", default=None, metavar="auto|HOST:PORT|ray://HOST:PORT",
                     help="Ray: the cluster to join (default: the one this process knows, "
                     "else a new local one)."),
        click.option("--executor", type=click.Choice(EXECUTORS), default="local",
                     show_default=True, help="Run compiles in local worker processes or as "
                     "Ray tasks (pip install 'hloscope[ray]')."),
    ]
    for option in options:
        collected = option(collected)
    return collected
