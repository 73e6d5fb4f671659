"""The built-in block's named tensors and the stored form of a per-tensor policy (no jax).

Every activation of a block that a policy may keep has a `checkpoint_name`
(`workloads/layers.py`), with MaxText's names as aliases; `mlp_out` is named for MaxText's sake
but is never a residual. A per-tensor policy gives each name one of CHOICES (`device`,
`offload`, `remat`; unnamed intermediates are recomputed); its stored form, the config's `remat`
field, is `names:NAME=CHOICE,...` listing the names not rematerialised in block order, or
`names:*=CHOICE` when every name has the same choice (`hloscope.configs.policies` parses what
users write into it). Per device the batch is split over the batch ways and micro-batches, and
the column-parallel tensors' widths over the tensor axis when it divides them.
The names, their shapes and MaxText's: see docs/sweeps.md, 'The block's named tensors'.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from hloscope.errors import UsageError

NAMED_PREFIX = "names:"
CHOICES = ("device", "offload", "remat")
EVERY = "*"
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


class BlockConfig(Protocol):
    """What of a TransformerConfig the tensors depend on (config.py imports this module)."""

    @property
    def d_model(self) -> int: ...

    @property
    def d_ff(self) -> int: ...

    @property
    def n_heads(self) -> int: ...

    @property
    def activation(self) -> str: ...

    @property
    def compute_dtype(self) -> str: ...

    @property
    def batch(self) -> int: ...

    @property
    def seq_len(self) -> int: ...

    @property
    def micro_batches(self) -> int: ...

    @property
    def kv_heads(self) -> int: ...

    @property
    def head_dim(self) -> int: ...


@dataclass(frozen=True)
class BlockTensor:
    """One named activation of a block: its per-token width, globally and per device."""

    name: str
    width: int  # features per token, the whole tensor
    column_parallel: bool  # split over the tensor axis with its weight
    maxtext: str | None  # MaxText's checkpoint name for the same tensor, None when it has none
    what: str

    def device_width(self, tensor: int) -> int:
        """Features per token on one device under `tensor`-way tensor parallelism."""
        if self.column_parallel and tensor > 1 and self.width % tensor == 0:
            return self.width // tensor
        return self.width


def block_tensors(config: BlockConfig) -> tuple[BlockTensor, ...]:
    """The block's named tensors, in forward order, for this config's style."""
    h, f = config.d_model, config.d_ff
    heads, kv = config.n_heads * config.head_dim, config.kv_heads * config.head_dim
    if config.kv_heads == config.n_heads:
        projections = [BlockTensor("qkv", 3 * h, True, "qkv_proj", "fused Q/K/V projection")]
    else:
        projections = [BlockTensor("query_proj", heads, True, "query_proj", "Q projection"),
                       BlockTensor("key_proj", kv, True, "key_proj", "K projection"),
                       BlockTensor("value_proj", kv, True, "value_proj", "V projection")]
    if config.activation == "swiglu":
        mlp_in = [BlockTensor("mlp_gate", f, True, "mlpwi_0", "SwiGLU gate projection"),
                  BlockTensor("mlp_up", f, True, "mlpwi_1", "SwiGLU up projection")]
    else:
        mlp_in = [BlockTensor("mlp_in", f, True, "mlpwi", "MLP input projection")]
    return (BlockTensor("norm1", h, False, None, "pre-attention norm output"), *projections,
            BlockTensor("attn_out", heads, True, "context", "attention output (context)"),
            BlockTensor("out_proj", h, False, "out_proj", "attention output projection"),
            BlockTensor("norm2", h, False, None, "pre-MLP norm output"), *mlp_in,
            BlockTensor("mlp_hidden", f, True, None, "MLP activation output"),
            BlockTensor("mlp_out", h, False, "mlpwo", "MLP output projection"))


def block_names(config: BlockConfig) -> tuple[str, ...]:
    return tuple(tensor.name for tensor in block_tensors(config))


def qkv_names(config: BlockConfig) -> tuple[str, ...]:
    """What `qkv` of `save_named` / `offload_named` stands for in this style."""
    names = block_names(config)
    return ("qkv",) if "qkv" in names else ("query_proj", "key_proj", "value_proj")


def sequences_per_device(config: BlockConfig, batch_ways: int) -> int:
    """Sequences of one micro-batch on one device: batch / batch ways / micro-batches."""
    local = max(config.batch // max(batch_ways, 1), 1)
    return max(local // config.micro_batches, 1)


def tokens_per_device(config: BlockConfig, batch_ways: int) -> int:
    return sequences_per_device(config, batch_ways) * config.seq_len


def tensor_bytes(tensor: BlockTensor, config: BlockConfig, batch_ways: int,
                 tensor_ways: int) -> int:
    """Bytes of one layer's `tensor` on one device (closed form from the config)."""
    return (tokens_per_device(config, batch_ways) * tensor.device_width(tensor_ways)
            * DTYPE_BYTES[config.compute_dtype])


def decode_named(remat: str, names: tuple[str, ...]) -> dict[str, str]:
    """Every name's choice from a stored `names:...` policy (unlisted names: remat)."""
    choices = dict.fromkeys(names, "remat")
    body = remat[len(NAMED_PREFIX):]
    for item in filter(None, body.split(",")):
        name, _, choice = item.partition("=")
        if choice not in CHOICES or (name != EVERY and name not in choices):
            raise UsageError(f"bad per-tensor policy {remat!r}: {item!r} is not NAME=CHOICE "
                             f"with NAME in {', '.join(names)} and CHOICE in "
                             f"{', '.join(CHOICES)}")
        choices.update(dict.fromkeys(names, choice) if name == EVERY else {name: choice})
    return choices


def encode_named(choices: dict[str, str], names: tuple[str, ...]) -> str:
    """The stored form of `choices` (the same program, the same text)."""
    distinct = {choices.get(name, "remat") for name in names}
    if len(distinct) == 1:
        return f"{NAMED_PREFIX}{EVERY}={distinct.pop()}"
    kept = [f"{name}={choices[name]}" for name in names if choices.get(name, "remat") != "remat"]
    return NAMED_PREFIX + ",".join(kept)


def names_with(choices: dict[str, str], choice: str) -> list[str]:
    return [name for name, chosen in choices.items() if chosen == choice]


def device_shape(name: str, shape: tuple[int, ...], config: BlockConfig, batch_ways: int,
                 tensor_ways: int) -> tuple[int, ...] | None:
    """One device's share of the block's named tensor `name`, traced (globally) as `shape`
    ([b, s, width], or [b, s, heads, head_dim] for the attention output): the batch split over
    the batch ways, the column-parallel widths (their first dimension after the sequence) over
    the tensor ways, as `tensor_bytes` counts them. None for a name that is not the block's or a
    shape not of that form."""
    tensor = next((t for t in block_tensors(config) if t.name == name), None)
    if tensor is None or len(shape) < 3 or shape[1] != config.seq_len:
        return None
    dims = list(shape)
    if batch_ways > 1 and dims[0] % batch_ways == 0:
        dims[0] //= batch_ways
    if tensor.device_width(tensor_ways) != tensor.width:
        if dims[2] % tensor_ways:
            return None
        dims[2] //= tensor_ways
    return tuple(dims)
