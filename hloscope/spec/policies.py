"""Remat variants by name: what `--policy` and `--policies` accept (no jax).

A variant name is `POLICY[:N][+unrolled|+scan]`:

- a `jax.checkpoint_policies` policy applied to every block: `none`, `full` (jax.checkpoint's
  default: nothing saved), `nothing_saveable`, `dots_saveable`, `dots_with_no_batch_dims_saveable`,
  `save_named` (save only the checkpoint_name'd qkv / attn_out / mlp_hidden), `offload_named`
  (offload those to pinned host memory instead);
- `nested:B`: a checkpointing scan, scan(remat(scan(remat(block), B)), L/B), B dividing L;
- `partial:N`: full remat of the first N layers only;
- `+unrolled` / `+scan`: unroll the layers (each under `named_scope("layer_<i>")`) or scan over
  them; without it the model's default layout is kept.

`all` expands to every family once: the seven policies, `nested` with the divisor of L nearest
sqrt(L), `partial` with L/2, and `full` in the other layer layout. `full` and
`nothing_saveable` are the same program; a sweep finds that by fingerprint and reports it once.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from hloscope.errors import UsageError
from hloscope.spec.config import REMAT_POLICIES, TransformerConfig

LAYOUTS = {"unrolled": False, "scan": True}
FAMILIES = (*REMAT_POLICIES, "nested", "partial")


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
    overrides = _layout_overrides(layout, name)
    family, _, argument = policy.partition(":")
    if family == "nested" and overrides.get("scan_layers") is False:
        raise UsageError(f"{name!r}: a nested scan remat scans over layers; drop +unrolled")
    overrides.update(_policy_overrides(family, argument, name, config))
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
    if family in REMAT_POLICIES:
        if argument:
            raise UsageError(f"policy {family!r} takes no argument (in {name!r})")
        return {"remat": family}
    if family == "nested":
        block = _number(argument, name) if argument else default_block_size(config.n_layers)
        return {"remat": "full", "remat_block": block, "scan_layers": True}
    if family == "partial":
        layers = _number(argument, name) if argument else config.n_layers // 2
        return {"remat": "full", "remat_layers": layers}
    raise UsageError(f"unknown remat policy {family!r} in {name!r}; known: "
                     f"{', '.join(FAMILIES)} (nested:B, partial:N), optionally +unrolled/+scan")


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
    names = [*REMAT_POLICIES, f"nested:{default_block_size(config.n_layers)}"]
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
