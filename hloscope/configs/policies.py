"""Remat variants by name: what `--policy` and `--policies` accept (no jax).

A variant name is `POLICY[:N][+unrolled|+scan]`: a `jax.checkpoint_policies` policy, one of
the named families (`offload_carries`, `offload_scan`, `recompute:R`, `nested:B`, `partial:N`,
`ac:N`) or a per-tensor `names:NAME=CHOICE,...` policy (choices `device`, `offload`, `remat`;
unnamed tensors are recomputed), with the layers unrolled or scanned. `all` expands to every
family once. `full` and `nothing_saveable` are the same program (a sweep reports it once).
The grammar, name by name: see docs/sweeps.md, 'Variant names'.
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hloscope.configs.config import (
    CARRY_OFFLOAD_POLICIES,
    RECOMPUTE_LEVELS,
    RECOMPUTE_POLICIES,
    REMAT_POLICIES,
    TransformerConfig,
)
from hloscope.configs.config_kind import ConfigT
from hloscope.configs.tensors import (
    CHOICES,
    EVERY,
    NAMED_PREFIX,
    block_names,
    block_tensors,
    encode_named,
    qkv_names,
    sequences_per_device,
    tensor_bytes,
)
from hloscope.errors import UsageError

POLICY_HELP = (
    "none, full, nothing_saveable, dots_saveable, dots_with_no_batch_dims_saveable, save_named, "
    "offload_named (jax's policies on every block); offload_carries (full remat, the layer "
    "scan's carries in pinned host memory), offload_scan (Levanter's offload: carries and the "
    "scan's parameter inputs); recompute:1 / recompute:2 (llm.c -r 1: recompute the MLP "
    "activation; -r 2: it and the norms); nested:B (checkpointing scan, B layers per block); "
    "partial:N (full remat of the first N layers); ac:N (llm.c -ac N: keep N layers' "
    "activations, recompute the rest = partial:L-N); names:NAME=device|offload|remat,... (per "
    "tensor: `hloscope policies --model M` lists the names); each optionally +unrolled or "
    "+scan.")
"""The variant grammar in one line, for the commands' --policy / --policies help."""

LAYOUTS = {"unrolled": False, "scan": True}
FAMILIES = (*REMAT_POLICIES, *CARRY_OFFLOAD_POLICIES, "recompute", "nested", "partial", "ac",
            "names")
SCANNED_ONLY = ("nested", "offload_scan")


@dataclass(frozen=True)
class Variant:
    """A named change of a model config: the remat policy and the layer layout."""

    name: str
    overrides: dict[str, Any] = field(default_factory=dict)

    def apply(self, config: ConfigT) -> ConfigT:
        """`config` (of either kind) with this variant's remat options (and layout) instead of
        its own."""
        values = {"remat": "none", "remat_block": 0, "remat_layers": None, **self.overrides}
        return dataclasses.replace(config, **values)

    @property
    def file_name(self) -> str:
        """A name safe in paths: `nested:4+unrolled` -> `nested-4-unrolled`,
        `names:qkv=device,attn_out=offload` -> `names-qkv.d-attn_out.o` (see `_named_slug`)."""
        if self.name.startswith(NAMED_PREFIX):
            return _named_slug(self.name)
        return self.name.replace(":", "-").replace("+", "-")


SLUG_LIMIT = 120
"""Longest per-tensor slug kept whole; longer ones end in a hash of the name (folder names
gain a `-batch<N>` suffix and file systems allow 255 bytes)."""


def _named_slug(name: str) -> str:
    """`names-NAME.c-...[-layout]`: names are [a-z0-9_] (or `*`, written `all`) and choices are
    told apart by their first letter, so distinct policies get distinct slugs of [a-z0-9_.-]."""
    policy, _, layout = name.partition("+")
    items = (item.partition("=") for item in policy[len(NAMED_PREFIX):].split(","))
    parts = [f"{'all' if key == EVERY else key}.{choice[0]}" for key, _, choice in items]
    slug = "-".join(["names", *parts, *([layout] if layout else [])])
    if len(slug) <= SLUG_LIMIT:
        return slug
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    return f"{slug[:SLUG_LIMIT - 17]}-{digest}"


def parse_variant(name: str, config: TransformerConfig) -> Variant:
    """The Variant a name describes; UsageError naming the grammar when it is not one."""
    text = name.strip().lower()
    policy, _, layout = text.partition("+")
    family, _, argument = policy.partition(":")
    layout_overrides = _layout_overrides(layout, name)
    if family in SCANNED_ONLY and layout_overrides.get("scan_layers") is False:
        raise UsageError(f"{name!r}: {family} remat scans over layers; drop +unrolled")
    overrides = {**_policy_overrides(family, argument, name, config), **layout_overrides}
    if family == "names":  # the stored form: the same policy, the same name
        text = overrides["remat"] + (f"+{layout}" if layout else "")
    variant = Variant(text, overrides)
    variant.apply(config)  # validates: e.g. a block size that does not divide the layers
    return variant


def _layout_overrides(layout: str, name: str) -> dict[str, Any]:
    if not layout:
        return {}
    if layout not in LAYOUTS:
        raise UsageError(f"bad layout {layout!r} in {name!r}: use +unrolled or +scan")
    return {"scan_layers": LAYOUTS[layout]}


def _policy_overrides(family: str, argument: str, name: str,
                      config: TransformerConfig) -> dict[str, Any]:
    if family == "names":
        return {"remat": parse_named(argument, config, name)}
    if family in (*REMAT_POLICIES, *CARRY_OFFLOAD_POLICIES):
        if argument:
            raise UsageError(f"policy {family!r} takes no argument (in {name!r})")
        scanned = {"scan_layers": True} if family in CARRY_OFFLOAD_POLICIES else {}
        return {"remat": family, **scanned}
    if family == "recompute":
        return {"remat": _recompute_policy(argument, name)}
    if family == "nested":
        block = _number(argument, name) if argument else default_block_size(config.n_layers)
        return {"remat": "full", "remat_block": block, "scan_layers": True}
    if family == "partial":
        layers = _number(argument, name) if argument else config.n_layers // 2
        return {"remat": "full", "remat_layers": layers}
    if family == "ac":
        return {"remat": "full", "remat_layers": config.n_layers - _kept_layers(argument, name,
                                                                                 config)}
    raise UsageError(f"unknown remat policy {family!r} in {name!r}; known: "
                     f"{', '.join(FAMILIES)} (recompute:1|2, nested:B, partial:N, ac:N, "
                     "names:NAME=CHOICE,...), "
                     "optionally +unrolled/+scan")


MAXTEXT_NAMES = {"context": "attn_out", "qkv_proj": "qkv", "mlpwi": "mlp_in",
                 "mlpwi_0": "mlp_gate", "mlpwi_1": "mlp_up", "mlpwo": "mlp_out"}
"""MaxText's checkpoint names (src/MaxText/estimator.py) that differ from the block's own;
`query_proj`, `key_proj`, `value_proj` and `out_proj` are the same in both."""


def parse_named(body: str, config: TransformerConfig, name: str = "") -> str:
    """The stored form (`hloscope.configs.tensors`) of a per-tensor policy's `NAME=CHOICE,...`;
    UsageError listing the valid names or choices."""
    names = block_names(config)
    choices = dict.fromkeys(names, "remat")
    items = [item.strip() for item in body.split(",") if item.strip()]
    if not items:
        raise UsageError(f"{name or 'names:'!r}: give NAME=CHOICE items, NAME in "
                         f"{', '.join(names)} (or *), CHOICE in {', '.join(CHOICES)}")
    for item in items:
        key, equals, choice = (part.strip() for part in item.partition("="))
        if not equals or choice not in CHOICES:
            raise UsageError(f"{item!r} in {name!r}: expected NAME=CHOICE, CHOICE one of "
                             f"{', '.join(CHOICES)}")
        choices.update(dict.fromkeys(_named_targets(key, config, name), choice))
    return encode_named(choices, names)


def _named_targets(key: str, config: TransformerConfig, name: str) -> tuple[str, ...]:
    names = block_names(config)
    if key == EVERY:
        return names
    if key == "qkv":
        return qkv_names(config)
    own = MAXTEXT_NAMES.get(key, key)
    if own in names:
        return (own,)
    known = [*names, *(k for k, v in MAXTEXT_NAMES.items() if v in names)]
    raise UsageError(f"unknown tensor {key!r} in {name!r}; this model's block names: "
                     f"{', '.join(known)}, or * for all (hloscope policies --model lists them)")


def alias_expansion(alias: str, config: TransformerConfig) -> str:
    """The per-tensor policy `save_named` / `offload_named` saves the same tensors as."""
    choice = {"save_named": "device", "offload_named": "offload"}[alias]
    saved = (*qkv_names(config), "attn_out", "mlp_hidden")
    choices = {name: (choice if name in saved else "remat") for name in block_names(config)}
    return encode_named(choices, block_names(config))


def _recompute_policy(argument: str, name: str) -> str:
    levels = "|".join(str(level) for level in RECOMPUTE_LEVELS)
    if not argument.isdigit() or int(argument) not in RECOMPUTE_LEVELS:
        raise UsageError(f"{name!r}: llm.c's recompute levels are recompute:{levels}")
    return f"recompute:{int(argument)}"


def _kept_layers(argument: str, name: str, config: TransformerConfig) -> int:
    """N of `ac:N`: the layers that keep their activations (1 <= N <= L)."""
    if not argument:
        raise UsageError(f"{name!r}: ac takes the number of layers that keep their activations "
                         f"(ac:N, 1 <= N <= {config.n_layers})")
    kept = _number(argument, name)
    if not 1 <= kept <= config.n_layers:
        raise UsageError(f"{name!r}: ac:N keeps activations of N layers, 1 <= N <= "
                         f"{config.n_layers}")
    return kept


def _number(text: str, name: str) -> int:
    if not text.isdigit():
        raise UsageError(f"expected a number after ':' in {name!r}")
    return int(text)


def default_block_size(layers: int) -> int:
    """The divisor of `layers` nearest sqrt(layers), avoiding 1 and `layers` when possible."""
    divisors = [d for d in range(1, layers + 1) if layers % d == 0]
    inner = [d for d in divisors if 1 < d < layers] or divisors
    return min(inner, key=lambda d: (abs(d - math.sqrt(layers)), -d))


def all_variant_names(config: TransformerConfig) -> list[str]:
    """What `all` expands to for this model."""
    other_layout = "unrolled" if config.scan_layers else "scan"
    names = [*REMAT_POLICIES, *CARRY_OFFLOAD_POLICIES, *RECOMPUTE_POLICIES,
             f"nested:{default_block_size(config.n_layers)}"]
    if config.n_layers > 1:
        names.append(f"partial:{config.n_layers // 2}")
    return [*names, f"full+{other_layout}"]


def split_policies(text: str) -> list[str]:
    """`a,names:x=device,y=offload,b` -> [a, names:x=device,y=offload, b]: an item with `=`
    continues the per-tensor policy before it (until that one has its +layout)."""
    items: list[str] = []
    for part in (part.strip() for part in text.split(",")):
        if not part:
            continue
        previous = items[-1].lower() if items else ""
        if "=" in part and ":" not in part and previous.startswith(NAMED_PREFIX) \
                and "+" not in previous:
            items[-1] = f"{items[-1]},{part}"
        else:
            items.append(part)
    return items


def parse_variants(text: str | Sequence[str], config: TransformerConfig) -> list[Variant]:
    """Variants from `a,b,c` or `all`, or a list of names (each one variant, or `all`);
    duplicates dropped, order kept."""
    names: list[str] = []
    items = split_policies(text) if isinstance(text, str) else [t.strip() for t in text]
    for item in items:
        names.extend(all_variant_names(config) if item.lower() == "all" else [item])
    if not names:
        raise UsageError("no remat policy given")
    variants: dict[str, Variant] = {}
    for name in names:
        variant = parse_variant(name, config)
        variants.setdefault(variant.name, variant)
    return list(variants.values())


# --- `hloscope policies`: the block's named tensors and the policy families ----------------
FAMILY_TABLE = (
    ("none / full / nothing_saveable", "jax's default or none: every block saves nothing "
     "but its input (full), or everything (none)"),
    ("dots_saveable / dots_with_no_batch_dims_saveable", "jax's policies: matmul outputs "
     "saved"),
    ("save_named / offload_named", "the block's qkv, attn_out and mlp_hidden saved on the "
     "device / offloaded (aliases of names:..., below)"),
    ("names:NAME=device|offload|remat,...", "per tensor: device-saved, offloaded to pinned "
     "host memory, or recomputed; unnamed ones recomputed (* = every name)"),
    ("offload_carries / offload_scan", "full remat, the layer input (and for offload_scan "
     "the parameter slices) in pinned host memory"),
    ("recompute:1 / recompute:2", "llm.c -r 1 / -r 2: projections and names saved but the "
     "MLP activation (and the norms)"),
    ("nested:B / partial:N / ac:N", "checkpointing scan of B layers; full remat of the first "
     "N layers; llm.c -ac N (= partial:L-N)"),
    ("+unrolled / +scan", "the layer layout, after any of the above"),
)
"""The families `--policies` takes, one line each (POLICY_HELP is the same in a sentence)."""


@dataclass(frozen=True)
class NamedTensorRow:
    """One named tensor of the block at a config, per layer and per device."""

    name: str
    maxtext: str | None
    what: str
    shape: tuple[int, ...]  # per device: [tokens' batch, seq, width]
    bytes_per_layer: int


@dataclass(frozen=True)
class NamedTensors:
    """`hloscope policies`: the block's named tensors at a model's config under its mesh."""

    model: str
    target: str
    batch_ways: int
    tensor_ways: int
    dtype: str
    tensors: tuple[NamedTensorRow, ...]
    aliases: dict[str, str]

    @property
    def bytes_per_layer(self) -> int:
        return sum(row.bytes_per_layer for row in self.tensors)

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "target": self.target, "batch_ways": self.batch_ways,
                "tensor_ways": self.tensor_ways, "dtype": self.dtype,
                "per": "device, layer and micro-batch",
                "tensors": [dataclasses.asdict(row) for row in self.tensors],
                "bytes_per_layer": self.bytes_per_layer, "aliases": self.aliases,
                "families": [{"family": f, "what": w} for f, w in FAMILY_TABLE]}


def named_tensors(model: str, config: TransformerConfig, target: str, batch_ways: int,
                  tensor_ways: int) -> NamedTensors:
    """The block's named tensors of `config` on one device of a mesh with `batch_ways` batch
    shards and `tensor_ways` tensor shards (closed form: hloscope.configs.tensors)."""
    local = sequences_per_device(config, batch_ways)
    rows = tuple(NamedTensorRow(
        tensor.name, tensor.maxtext, tensor.what,
        (local, config.seq_len, tensor.device_width(tensor_ways)),
        tensor_bytes(tensor, config, batch_ways, tensor_ways)) for tensor in block_tensors(config))
    aliases = {alias: alias_expansion(alias, config) for alias in ("save_named", "offload_named")}
    return NamedTensors(model, target, batch_ways, tensor_ways, config.compute_dtype, rows,
                        aliases)
