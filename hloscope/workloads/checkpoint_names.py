"""The `checkpoint_name`s of a traced step and what the variant's policy does with each (jax).

JAX lowers `checkpoint_name(x, "hidden")` to `x` itself (the `name` primitive's lowering returns
its operand), so the HLO cannot name them; the jaxpr can. `named_values` walks the step's jaxpr
(the one `jax.jit(fn).trace(*args)` gives, which the compile then lowers: no extra trace or
compile) and its sub-jaxprs (scan and while bodies, jit calls, `jax.checkpoint`s), and lists
each named value once per (name, source line): its per-call shape, dtype and bytes, the line
that named it and the line of the operation that made it (the line XLA's metadata gives the
buffer: `formats.checkpoint_names` matches saved names to the live set by either).

The decision (`saved`, `offloaded`, `recomputed`) is read from jax's own partial evaluation
where the traced step shows it: value_and_grad splits each `jax.checkpoint` into the forward
pass (no checkpoint left) and a differentiated `remat2` equation in the backward pass that
recomputes what was not saved. A name in that equation whose operand comes into it is a residual
the forward pass saved; one brought back by a `device_put` was offloaded; one remade inside it is
recomputed. A name only in the forward pass (saved with everything it needs, so the backward has
nothing of it to recompute) is decided by asking the variant's policy as partial evaluation asks
it (jax/_src/interpreters/partial_eval.py: `policy(prim, *avals, **params)` -> True / `Saveable`,
`Offloadable`, False / `Recompute`): of the `name` equation, then of the equation that made the
value (`dots_saveable` keeps a named matmul output as the matmul's: `saved_residuals` then says
`output of dot_general`). A name in no checkpoint of a variant that checkpoints nothing is
`not checkpointed`: the backward pass keeps what it reads.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from hloscope.formats.checkpoint_names import CheckpointName

NOT_CHECKPOINTED = "not checkpointed"
_CALLS = ("jit", "pjit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call")


@dataclass(frozen=True)
class Variant:
    """The variant's `jax.checkpoint`: whether it wraps blocks, and its policy (None: jax's
    default, which saves nothing)."""

    checkpointed: bool
    policy: Callable[..., Any] | None = None
    name: str = ""


def named_values(closed_jaxpr: Any, variant: Variant) -> list[CheckpointName]:
    """Every checkpoint name of the jaxpr, once per (name, source line), in jaxpr order; where a
    name occurs more than once (the forward pass and the backward pass's checkpoint), the
    occurrence that says most: a differentiated checkpoint's, then any checkpoint's."""
    found: dict[tuple[str, str], tuple[int, CheckpointName]] = {}
    for eqn, jaxpr, checkpoint in _names(closed_jaxpr.jaxpr, None):
        value = _described(eqn, jaxpr, checkpoint, variant)
        rank = 0 if checkpoint is None else 1 + checkpoint[1]
        key = (value.name, value.source)
        if key in found and rank > found[key][0] and not value.made_by:
            # a residual: what made it is in the forward pass's copy
            earlier = found[key][1]
            value = dataclasses.replace(value, made_by=earlier.made_by, made_at=earlier.made_at)
        if key not in found or rank > found[key][0]:
            found[key] = (rank, value)
    return [value for _, value in found.values()]


def variant_of(builder_kwargs: dict[str, Any]) -> Variant | None:
    """The variant's checkpoint from a compile request's builder arguments: a TransformerConfig's
    or a StepConfig's `remat` (None for other builders)."""
    from hloscope.configs.config import TransformerConfig
    from hloscope.workloads.remat import checkpoint_policy

    config = builder_kwargs.get("step", builder_kwargs)
    remat = config.get("remat") if isinstance(config, dict) else None
    if not isinstance(remat, str):
        return None
    if remat == "none":
        return Variant(False, None, remat)
    # the built-in block's names (`qkv` as its Q/K/V projections, `names:` policies) need its
    # config; a user step's names are its own
    block = None if "step" in builder_kwargs else TransformerConfig.from_dict(builder_kwargs)
    return Variant(True, checkpoint_policy(remat, block), remat)


_IN_CHECKPOINT: Any = object()  # a remat2 equation with jax's default policy (policy=None)
_INPUT = object()  # a value that comes into a jaxpr (a residual, in a backward checkpoint)
_PASS_THROUGH = ("reduce_precision", "optimization_barrier")  # identities jax's remat inserts


def _names(jaxpr: Any, policy: Any) -> Iterator[tuple[Any, Any, Any]]:
    """(name equation, its jaxpr, the enclosing checkpoint) for every name: the checkpoint is
    None outside one, else (its policy or _IN_CHECKPOINT, whether it is differentiated)."""
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "name":
            yield eqn, jaxpr, policy
        inner = policy
        if eqn.primitive.name in ("remat2", "checkpoint"):
            inner = (eqn.params.get("policy") or _IN_CHECKPOINT,
                     bool(eqn.params.get("differentiated")))
        for sub in _subjaxprs(eqn):
            yield from _names(sub, inner)


def _subjaxprs(eqn: Any) -> Iterator[Any]:
    for value in eqn.params.values():
        for item in value if isinstance(value, list | tuple) else (value,):
            inner = getattr(item, "jaxpr", item)
            if hasattr(inner, "eqns"):
                yield inner


def _described(eqn: Any, jaxpr: Any, checkpoint: Any, variant: Variant) -> CheckpointName:
    aval = eqn.invars[0].aval
    origin = _origin(jaxpr, eqn.invars[0])
    maker = None if origin is _INPUT else origin
    decision, decided_by = _decision(eqn, origin, checkpoint, variant)
    return CheckpointName(
        name=str(eqn.params["name"]), shape=tuple(int(d) for d in aval.shape),
        dtype=str(aval.dtype), bytes=int(aval.size) * aval.dtype.itemsize,
        source=_line(eqn), made_by="" if maker is None else maker.primitive.name,
        made_at="" if maker is None else _line(maker), decision=decision, decided_by=decided_by)


def _origin(jaxpr: Any, var: Any) -> Any:
    """The equation that made `var` (looking through jit calls to the primitive inside, and
    through the identities remat inserts), or _INPUT when it comes into `jaxpr`."""
    for eqn in jaxpr.eqns:
        if not any(out is var for out in eqn.outvars):
            continue
        if eqn.primitive.name in _PASS_THROUGH and eqn.invars:
            return _origin(jaxpr, eqn.invars[0])
        if eqn.primitive.name in _CALLS:
            index = next(i for i, out in enumerate(eqn.outvars) if out is var)
            for sub in _subjaxprs(eqn):
                inner = _origin(sub, sub.outvars[index])
                if inner is not _INPUT and inner is not None:
                    return inner
        return eqn
    return _INPUT if any(var is v for v in (*jaxpr.invars, *jaxpr.constvars)) else None


def _decision(eqn: Any, origin: Any, checkpoint: Any,
              variant: Variant) -> tuple[str | None, str]:
    if checkpoint is not None and checkpoint[1]:
        return _partial_evaluated(origin)
    if checkpoint is None and not variant.checkpointed:
        return NOT_CHECKPOINTED, "no jax.checkpoint around it"
    if checkpoint is None:
        policy, who = variant.policy or _IN_CHECKPOINT, "the variant's policy"
    else:
        policy, who = checkpoint[0], "the enclosing jax.checkpoint's policy"
    if policy is _IN_CHECKPOINT:
        return "recomputed", f"{who} (jax's default: save nothing)"
    maker = None if origin is _INPUT else origin
    try:
        answer = _kind(policy(eqn.primitive, *[v.aval for v in eqn.invars], **eqn.params))
        if answer == "recomputed" and maker is not None:
            made = _kind(policy(maker.primitive, *[v.aval for v in maker.invars],
                                **maker.params))
            if made != "recomputed":
                return made, f"{who}, asked of the {maker.primitive.name} that made it"
    except Exception:  # a user's policy may refuse primitives it was not written for
        return None, f"{who} could not be asked"
    return answer, f"{who}, asked of the name"


def _partial_evaluated(origin: Any) -> tuple[str, str]:
    """A name in the backward pass's checkpoint (jax's partial evaluation has split the block):
    an operand that comes in is a residual the forward pass saved; one brought back from the
    host by a device_put of an incoming value was offloaded; anything else is recomputed."""
    why = "jax's partial evaluation of the enclosing jax.checkpoint"
    if origin is _INPUT:
        return "saved", f"{why}: a residual"
    if origin is not None and origin.primitive.name == "device_put":
        return "offloaded", f"{why}: a residual brought back from host memory"
    return "recomputed", f"{why}: remade in the backward pass"


def _kind(answer: Any) -> str:
    from jax._src.interpreters import partial_eval as pe

    if isinstance(answer, pe.Offloadable):
        return "offloaded"
    # jax's policies answer a bool, the singleton pe.Saveable / pe.Recompute, or an Offloadable
    if answer is True or answer is pe.Saveable:
        return "saved"
    return "recomputed"


def _line(eqn: Any) -> str:
    from jax._src import source_info_util

    frame = source_info_util.user_frame(eqn.source_info.traceback)
    return "" if frame is None else f"{frame.file_name}:{frame.start_line}"
