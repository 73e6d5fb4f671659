"""What JAX's name stack (metadata `op_name`) says about an instruction: phase, scope, layer.

**Phase.** Under `jax.grad`, JAX names what it differentiates `jvp(...)` and the backward pass
`transpose(jvp(...))`; `jax.checkpoint` puts recomputed forward ops under
`.../checkpoint/rematted_computation/...` inside the backward. So, testing in this order:
recompute = the op_name contains `rematted_computation`; backward = it contains `transpose(`;
forward = it contains `jvp(`; anything else is outside differentiation (the optimizer update or
other work; the flops analysis decides which from the data flow). An op_name holding several
names joined by `;` (XLA merges them when it combines ops) is read by its first name.

**Scope.** The op_name split at `/` (outside parentheses), with JAX's transformation wrappers
unwrapped (`transpose(jvp(layer_0))` -> `layer_0`, `jit(step)` -> `step`), the autodiff and
remat markers (`checkpoint`, `rematted_computation`, `remat`, `remat2`) and the plumbing of
`lax.scan` and `jax.checkpoint` (`while`, `body`, `closed_call`, `core_call`) dropped, and
repeated components collapsed, so that a layer's forward, backward and recompute share one scope
and a scanned layer's scope reads like an unrolled one's.

**Layer.** The first name-stack component naming a numbered layer or block (`layer_3`,
`layers_3`, `block.2`, `Block_0`, ...), as `jax.named_scope` or a Flax module name puts it.
"""
from __future__ import annotations

import re
from enum import StrEnum
from functools import lru_cache


class Phase(StrEnum):
    FORWARD = "forward"
    BACKWARD = "backward"
    RECOMPUTE = "recompute"
    OPTIMIZER = "optimizer"
    OTHER = "other"


PHASE_ORDER = (Phase.FORWARD, Phase.BACKWARD, Phase.RECOMPUTE, Phase.OPTIMIZER, Phase.OTHER)
RECOMPUTE_MARKER = "rematted_computation"
_WRAPPERS = ("jvp", "transpose", "jit", "pjit", "vmap", "checkpoint", "remat")
_WRAPPED = re.compile(r"^(?:" + "|".join(_WRAPPERS) + r")\((.*)\)$")
_MARKERS = frozenset({"checkpoint", "rematted_computation", "remat", "remat2", "closed_call",
                      "core_call", "while", "body"})
_LAYER = re.compile(r"(?<![A-Za-z0-9])((?:layer|block)s?[_.\-]?(\d+))(?![0-9])", re.I)
UNNAMED_SCOPE = "(no op_name)"


def first_name(op_name: str) -> str:
    return op_name.split(";", 1)[0] if ";" in op_name else op_name


@lru_cache(maxsize=131072)
def phase_of(op_name: str) -> Phase | None:
    """The phase an op_name states, or None when it is outside differentiation."""
    name = first_name(op_name)
    if RECOMPUTE_MARKER in name:
        return Phase.RECOMPUTE
    if "transpose(" in name:
        return Phase.BACKWARD
    if "jvp(" in name:
        return Phase.FORWARD
    return None


# --by scope rows: the first components below the common prefix (flops, remat, memory, trace):
# at 3 a layer's ops show beside one another (`step/layer_0/dot_general`), --by layer sums them
DEFAULT_SCOPE_DEPTH = 3


@lru_cache(maxsize=131072)
def scope_path(op_name: str) -> tuple[str, ...]:
    if not op_name:
        return (UNNAMED_SCOPE,)
    path: list[str] = []
    for component in split_name_stack(first_name(op_name)):
        component = _unwrap(component)
        if component and component not in _MARKERS and (not path or path[-1] != component):
            path.append(component)
    return tuple(path) or (UNNAMED_SCOPE,)


def split_name_stack(name: str) -> list[str]:
    """`a/f(b/c)/d` -> ['a', 'f(b/c)', 'd']: splits at slashes outside parentheses."""
    if "(" not in name:
        return name.split("/")
    parts, depth, start = [], 0, 0
    for i, char in enumerate(name):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "/" and depth == 0:
            parts.append(name[start:i])
            start = i + 1
    parts.append(name[start:])
    return parts


def _unwrap(component: str) -> str:
    while True:
        match = _WRAPPED.match(component)
        if not match:
            return component
        component = match.group(1)


@lru_cache(maxsize=131072)
def layer_of(op_name: str) -> str | None:
    match = _LAYER.search(first_name(op_name))
    return match.group(1) if match else None


def layer_number(layer: str) -> int:
    match = _LAYER.search(layer)
    return int(match.group(2)) if match else -1
