"""A user's train step as a workload: the factory, the variant and the grid point (no jax).

`hloscope sweep --step FILE.py:make_step` (and `hloscope.sweep(make_step, ...)`) compiles the
user's own step once per remat variant. The factory is called in the compile's child process as

    make_step(remat)            -> (step_fn, args) or (step_fn, args, jit_kwargs)
    make_step(remat, layers)    the same, taking the layer-scan hook (the second parameter
                                named `layers`; other parameters need defaults)

`remat(block)` wraps a block in `jax.checkpoint` with the variant's policy (unchanged for `none`);
`remat.policy` is the variant's name, `remat.batch` / `remat.seq_len` the grid point the sweep
asks for (None when it asks for none) and `remat.mesh` the target's devices as a mesh (the
`--mesh` axes, else one `data` axis). `layers.scan(block, carry, stacked)` runs the layers:
`block(carry, params_i) -> carry` over the leading axis of `stacked`, with the structure the
variant needs. Variants on every factory: jax's policies (REMAT_POLICIES). Variants only on a
factory that takes `layers` (STRUCTURAL), refused before compiling otherwise:

- `nested:B`: scan(checkpoint(scan(checkpoint(block), B)), L/B), B dividing the layers;
- `offload_carries`: full remat with each block's input (the scan's carry) in pinned host memory.

Per-tensor policies on every factory: `names:NAME=device|offload|remat,...` over the step's own
`checkpoint_name`s (`*` for every one of them; names are case-sensitive, [A-Za-z0-9_.-]). Only a
trace of the step knows its names, so the API traces it once (`workloads.step_names`, a child
process, no compile) before compiling anything: `resolve_step_named` refuses a name the step
does not use, listing the ones it does, and turns the policy into the explicit form the compile
child reads (every name kept listed with its choice, no `*`; `workloads.remat` compiles it with
`save_and_offload_only_these_names` as it does the built-in block's).

The factory travels to the child by reference (`FILE.py:function` or `module:function`, what
the CLI gives) or pickled (`payload`, base64 cloudpickle: what the API sends, so closures and
functions of `__main__` work). `source_hash` — of the file, or of the pickled bytes — is in the
build cache key; a change to another module the factory imports is not (`--no-cache` then).

`StepConfig` has the fields the sweep, the mesh plan and the build manifest read from a
TransformerConfig (remat fields, batch, seq_len, compute_dtype, the mesh sizes), so a user step
runs through the same grid, search, cache and ranking as a preset.
"""
from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hloscope.configs.config import DTYPES, REMAT_POLICIES
from hloscope.configs.policies import Variant, split_policies
from hloscope.configs.tensors import CHOICES, EVERY, NAMED_PREFIX, decode_named
from hloscope.errors import UsageError

STRUCTURAL = ("nested", "offload_carries")
"""Variant families that need the factory's `layers.scan` hook."""
STEP_ALL = ("none", "full", "dots_saveable", "dots_with_no_batch_dims_saveable")
"""What `all` means for a user step: `nothing_saveable` is `full`, and `save_named` /
`offload_named` name the built-in block's activations."""
STEP_POLICY_HELP = (
    "with --step: jax's policies (none, full, nothing_saveable, dots_saveable, "
    "dots_with_no_batch_dims_saveable, save_named, offload_named) and names:NAME=device|offload|"
    "remat,... over the step's checkpoint_names (`hloscope policies --step` lists them) on every "
    "factory; nested:B and offload_carries when make_step takes the second parameter (layers) "
    "and scans with layers.scan; all = none, full, dots_saveable, "
    "dots_with_no_batch_dims_saveable.")


@dataclass(frozen=True)
class StepConfig:
    """One compile of a user's step: the factory, the variant's remat, the grid point."""

    factory: str  # "FILE.py:function", "module:function", or the pickled function's name
    source_hash: str
    takes_layers: bool = False  # make_step(remat, layers): the structural variants work
    payload: str | None = None  # base64 cloudpickle of the factory (None: import `factory`)
    remat: str = "none"
    remat_block: int = 0  # nested:B
    remat_layers: int | None = None  # partial remat: never set for a step
    scan_layers: bool | None = None  # set by variants; the factory decides its layout
    batch: int = 0  # the grid point given to the factory (0: the factory's own)
    seq_len: int = 0
    compute_dtype: str = "bfloat16"  # the roofline's peak FLOP/s (--compute-dtype)
    tensor_parallel: int = 1  # the mesh (--mesh and its options), as `spec.mesh` plans it
    dcn_data_parallel: int | None = None
    ici_fsdp_parallel: int | None = None

    def __post_init__(self) -> None:
        if self.remat_layers is not None:
            raise UsageError("partial remat needs the built-in model's layers; a user step "
                             "takes jax's policies, nested:B and offload_carries")
        if self.compute_dtype not in DTYPES:
            raise UsageError(f"compute dtype {self.compute_dtype!r}: choose from "
                             f"{', '.join(DTYPES)}")
        for name in ("batch", "seq_len"):
            if getattr(self, name) < 0:
                raise UsageError(f"{name} must be at least 1 (0: the factory's own)")

    @property
    def fsdp(self) -> bool:
        """No FSDP default of the built-in model: the mesh's fsdp axis is what --mesh says."""
        return False

    @property
    def policy(self) -> str:
        """The variant's name as the factory sees it: `full`, `nested:4`, ..."""
        return f"nested:{self.remat_block}" if self.remat_block else self.remat

    @property
    def structural(self) -> bool:
        return self.remat_block > 0 or self.remat == "offload_carries"

    @property
    def tokens(self) -> int:
        """Tokens per step when the grid point says (batch x seq_len), else 1: the ranking's
        rates are then steps per second (a sweep note says so)."""
        return (self.batch or 1) * (self.seq_len or 1)

    @property
    def tokens_known(self) -> bool:
        return self.batch > 0 and self.seq_len > 0

    def to_dict(self) -> dict[str, Any]:
        return {"step": dataclasses.asdict(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StepConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data["step"].items() if k in known})

    def describe(self) -> dict[str, Any]:
        """For manifests and sweep.json: the config without the pickled bytes."""
        data = dataclasses.asdict(self)
        data["payload"] = None if self.payload is None else f"<{len(self.payload)} base64 chars>"
        return {"step": data}


def is_step_config(data: dict[str, Any]) -> bool:
    """Whether a manifest's config is a user step's."""
    return isinstance(data, dict) and "step" in data


def reference_source(reference: str) -> tuple[str, Path]:
    """`FILE.py:function` or `module:function` -> (the reference with the file made absolute,
    the file to hash); UsageError naming the form for anything else. A module is located
    without importing it (importlib's finder)."""
    import importlib.util

    location, colon, function = reference.rpartition(":")
    if not colon or not location or not function.isidentifier():
        raise UsageError(f"--step {reference!r}: give FILE.py:function or module:function")
    if location.endswith(".py"):
        path = Path(location).expanduser().resolve()
        if not path.is_file():
            raise UsageError(f"--step {reference!r}: no file {location}")
        return f"{path}:{function}", path
    try:
        found = importlib.util.find_spec(location)
    except (ImportError, ValueError):
        found = None
    if found is None or not found.origin or not Path(found.origin).is_file():
        raise UsageError(f"--step {reference!r}: module {location!r} not found on the path")
    return reference, Path(found.origin)


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def parse_step_variants(text: str, takes_layers: bool) -> list[Variant]:
    """The variants of a user step from `a,b,c` or `all`; the structural ones refused (with how
    to take the hook) when the factory does not take `layers`."""
    names: list[str] = []
    for item in split_policies(text):
        item = step_policy_name(item)
        names.extend(STEP_ALL if item == "all" else [item])
    if not names:
        raise UsageError("no remat policy given")
    variants: dict[str, Variant] = {}
    for name in names:
        variants.setdefault(name, _step_variant(name, takes_layers))
    return list(variants.values())


def step_policy_name(item: str) -> str:
    """A step variant's name as its sweep row has it: lower case, but a per-tensor policy keeps
    its names' case (they are the step's checkpoint_names) and takes its stored form."""
    item = item.strip()
    return step_named(item) if item[:len(NAMED_PREFIX)].lower() == NAMED_PREFIX \
        else item.lower()


def _step_variant(name: str, takes_layers: bool) -> Variant:
    if name.startswith(NAMED_PREFIX):
        return Variant(name, {"remat": name})
    family, _, argument = name.partition(":")
    if family in STRUCTURAL and not takes_layers:
        raise UsageError(
            f"{name!r} needs the layer structure of your model: declare "
            "`def make_step(remat, layers)` and run the layers with "
            "`x = layers.scan(block, x, stacked_params)` (block(x, params) -> x)")
    if family in REMAT_POLICIES and not argument and "+" not in name:
        return Variant(name, {"remat": family})
    if family == "offload_carries" and not argument:
        return Variant(name, {"remat": family})
    if family == "nested" and argument.isdigit() and int(argument) >= 1:
        return Variant(name, {"remat": "full", "remat_block": int(argument)})
    if family == "nested":
        raise UsageError(f"{name!r}: give the layers per block, nested:B (B dividing the "
                         "number of layers the factory scans)")
    raise UsageError(f"{name!r} is no remat variant of a user step; {STEP_POLICY_HELP}")


def _named_items(policy: str) -> list[tuple[str, str]]:
    """(NAME, CHOICE) of `names:NAME=CHOICE,...`; UsageError naming the grammar."""
    body = policy.partition(":")[2]
    items = [item.strip() for item in body.split(",") if item.strip()]
    if not items:
        raise UsageError(f"{policy!r}: give NAME=CHOICE items, NAME one of your step's "
                         f"checkpoint_names (or *), CHOICE in {', '.join(CHOICES)}")
    pairs = []
    for item in items:
        key, equals, choice = (part.strip() for part in item.partition("="))
        if not equals or choice.lower() not in CHOICES or not _is_name(key):
            raise UsageError(f"{item!r} in {policy!r}: expected NAME=CHOICE, NAME a "
                             "checkpoint_name of [A-Za-z0-9_.-] or *, CHOICE one of "
                             f"{', '.join(CHOICES)}")
        pairs.append((key, choice.lower()))
    return pairs


def _is_name(key: str) -> bool:
    return key == EVERY or (bool(key) and all(c.isalnum() or c in "_.-" for c in key))


def step_named(policy: str) -> str:
    """The stored name of a user step's per-tensor policy: `names:` then `*=CHOICE` when the
    last `*` chose other than remat, then the names whose choice differs from it, in the order
    given (a later item overrides an earlier one; `*` overrides every earlier item)."""
    every = "remat"
    chosen: dict[str, str] = {}
    for key, choice in _named_items(policy):
        if key == EVERY:
            every, chosen = choice, {}
        else:
            chosen.pop(key, None)
            chosen[key] = choice
    kept = [f"{key}={choice}" for key, choice in chosen.items() if choice != every]
    head = [f"{EVERY}={every}"] if every != "remat" or not kept else []
    return NAMED_PREFIX + ",".join([*head, *kept])


def resolve_step_named(policy: str, step_names: tuple[str, ...], factory: str) -> str:
    """The explicit form of a step's stored per-tensor policy for the compile child: every name
    the policy keeps, with its choice (`names:` alone: every name recomputed). UsageError, with
    the step's names, for a name the traced step does not use."""
    names = tuple(dict.fromkeys(step_names))
    listed = [key for key, _ in _named_items(policy) if key != EVERY]
    if not names:
        raise UsageError(f"{policy!r}: {factory} names no tensors (no jax.ad_checkpoint."
                         "checkpoint_name in the traced step), so a per-tensor policy has "
                         "nothing to choose for")
    unknown = [key for key in listed if key not in names]
    if unknown:
        raise UsageError(f"unknown checkpoint name {unknown[0]!r} in {policy!r}; {factory} "
                         f"names: {', '.join(names)} (hloscope policies --step lists them)")
    choices = decode_named(policy, names)
    return NAMED_PREFIX + ",".join(f"{n}={c}" for n, c in choices.items() if c != "remat")


def resolved_step_variant(variant: Variant, step_names: tuple[str, ...],
                          factory: str) -> Variant:
    """`variant` compiling its explicit form (its name stays what the user wrote, stored)."""
    if not variant.name.startswith(NAMED_PREFIX):
        return variant
    return Variant(variant.name, {**variant.overrides,
                                  "remat": resolve_step_named(variant.name, step_names,
                                                              factory)})


def explicit_named(policy: str) -> tuple[str, ...]:
    """The names an explicit per-tensor policy lists (what `resolve_step_named` wrote); a `*`
    other than `*=remat` cannot be compiled without the step's names (ValueError)."""
    items = _named_items(policy) if policy != NAMED_PREFIX else []
    if any(key == EVERY and choice != "remat" for key, choice in items):
        raise ValueError(f"{policy!r}: a user step's per-tensor policy is resolved against its "
                         "traced names before compiling (spec.step.resolve_step_named)")
    return tuple(key for key, _ in items if key != EVERY)



@dataclass(frozen=True)
class StepTensorRow:
    """One checkpoint name of a user's step: the traced value of one call (global shape)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    bytes: int
    source: str  # file:line of the checkpoint_name call


@dataclass(frozen=True)
class StepTensors:
    """`hloscope policies --step`: the step's checkpoint names, traced for a target."""

    factory: str
    target: str
    tensors: tuple[StepTensorRow, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(row.name for row in self.tensors))

    def to_dict(self) -> dict[str, Any]:
        return {"factory": self.factory, "target": self.target,
                "per": "call (one layer inside a layer scan), global: the traced shape",
                "tensors": [dataclasses.asdict(row) for row in self.tensors],
                "names": list(self.names)}

