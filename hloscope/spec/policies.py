"""Remat variants by name: what `--policy` and `--policies` accept (no jax).

A variant name is `POLICY[:N][+unrolled|+scan]`:

- a `jax.checkpoint_policies` policy applied to every block: `none`, `full` (jax.checkpoint's
  default: nothing saved), `nothing_saveable`, `dots_saveable`, `dots_with_no_batch_dims_saveable`,
  `save_named` (save only the checkpoint_name'd qkv / attn_out / mlp_hidden), `offload_named`
  (offload those to pinned host memory instead);
- `offload_carries`: full remat of each block, with the block's input (the layer scan's carry,
  the residual stream between layers: what full remat saves) offloaded to pinned host memory
  instead of kept in device memory (MaxText's `decoder_layer_input` offload). Scans over layers
  unless `+unrolled` is given (then each unrolled block's input is offloaded);
- `offload_scan`: Levanter's `offload` policy, the scan's carries and its per-layer inputs (here
  the block's parameter slices) offloaded; always scanned;
- `recompute:R`, llm.c's `-r R`: save every projection (matmul without batch dimensions) and the
  named activations, except: `recompute:1` recomputes the MLP activation (GELU / SwiGLU output)
  from the saved projections in the backward pass; `recompute:2` recomputes it and both norm
  outputs (from the block input and the saved attention projection). The attention's
  [b, h, s, s] internals are recomputed from the saved Q/K/V at both levels, as llm.c's cuDNN
  attention does;
- `nested:B`: a checkpointing scan, scan(remat(scan(remat(block), B)), L/B), B dividing L;
- `partial:N`: full remat of the first N layers only;
- `ac:N`, llm.c's `-ac N`: full activations kept for N layers (the last N, which the backward
  pass reaches first) and whole-block recompute on the other L - N: the same program as
  `partial:L-N`;
- `+unrolled` / `+scan`: unroll the layers (each under `named_scope("layer_<i>")`) or scan over
  them; without it the model's default layout is kept.

`all` expands to every family once: the seven jax policies, `offload_carries`, `offload_scan`,
`recompute:1`, `recompute:2`, `nested` with the divisor of L nearest sqrt(L), `partial` with L/2
(`ac` is the same family), and `full` in the other layer layout. `full` and `nothing_saveable`
are the same program; a sweep finds that by fingerprint and reports it once.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from hloscope.errors import UsageError
from hloscope.spec.config import (
    CARRY_OFFLOAD_POLICIES,
    RECOMPUTE_LEVELS,
    RECOMPUTE_POLICIES,
    REMAT_POLICIES,
    TransformerConfig,
)

POLICY_HELP = (
    "none, full, nothing_saveable, dots_saveable, dots_with_no_batch_dims_saveable, save_named, "
    "offload_named (jax's policies on every block); offload_carries (full remat, the layer "
    "scan's carries in pinned host memory), offload_scan (Levanter's offload: carries and the "
    "scan's parameter inputs); recompute:1 / recompute:2 (llm.c -r 1: recompute the MLP "
    "activation; -r 2: it and the norms); nested:B (checkpointing scan, B layers per block); "
    "partial:N (full remat of the first N layers); ac:N (llm.c -ac N: keep N layers' "
    "activations, recompute the rest = partial:L-N); each optionally +unrolled or +scan.")
"""The variant grammar in one line, for the commands' --policy / --policies help."""

LAYOUTS = {"unrolled": False, "scan": True}
FAMILIES = (*REMAT_POLICIES, *CARRY_OFFLOAD_POLICIES, "recompute", "nested", "partial", "ac")
SCANNED_ONLY = ("nested", "offload_scan")


@dataclass(frozen=True)
class Variant:
    """A named change of a model config: the remat policy and the layer layout."""

    name: str
    overrides: dict[str, Any] = field(default_factory=dict)

    def apply(self, config: TransformerConfig) -> TransformerConfig:
        """`config` with this variant's remat options (and layout) instead of its own."""
        values = {"remat": "none", "remat_block": 0, "remat_layers": None, **self.overrides}
        return dataclasses.replace(config, **values)

    @property
    def file_name(self) -> str:
        """A name safe in paths: `nested:4+unrolled` -> `nested-4-unrolled`."""
        return self.name.replace(":", "-").replace("+", "-")


def parse_variant(name: str, config: TransformerConfig) -> Variant:
    """The Variant a name describes; UsageError naming the grammar when it is not one."""
    text = name.strip().lower()
    policy, _, layout = text.partition("+")
    family, _, argument = policy.partition(":")
    layout_overrides = _layout_overrides(layout, name)
    if family in SCANNED_ONLY and layout_overrides.get("scan_layers") is False:
        raise UsageError(f"{name!r}: {family} remat scans over layers; drop +unrolled")
    overrides = {**_policy_overrides(family, argument, name, config), **layout_overrides}
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
                     f"{', '.join(FAMILIES)} (recompute:1|2, nested:B, partial:N, ac:N), "
                     "optionally +unrolled/+scan")


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


def parse_variants(text: str, config: TransformerConfig) -> list[Variant]:
    """Variants from `a,b,c` or `all` (duplicates dropped, order kept)."""
    names: list[str] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        names.extend(all_variant_names(config) if item.lower() == "all" else [item])
    if not names:
        raise UsageError("no remat policy given")
    variants: dict[str, Variant] = {}
    for name in names:
        variant = parse_variant(name, config)
        variants.setdefault(variant.name, variant)
    return list(variants.values())
