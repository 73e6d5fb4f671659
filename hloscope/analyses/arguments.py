"""A program's arguments as the user's code names them: pytree paths, roles and shardings.

When `jax.jit` is given pytrees, JAX writes each flattened argument's path into its entry
parameter's `op_name` (`params['layers']['mlp']['w1']`, `state.opt_state[0].mu['w']`) and, on
the CPU, into its name (`params__layers____mlp____w1__.1`). The first component that says what
the argument is decides its role: `params`/`weights`/... a model parameter; `opt_state`, `mu`,
`nu`, `master`, `momentum`, `step`, ... optimizer state (fp32 master weights belong to the
optimizer in mixed precision); `batch`, `inputs`, `tokens`, ... an input. Anything else is a
parameter. Used by memory's categories, by the layer-loop finder (a layer loop slices a model
parameter, not the batch) and by the reports that name arguments.
"""
from __future__ import annotations

import re

from hloscope.model.instruction import Instruction

PARAMETER, OPTIMIZER_STATE, INPUT = "parameter", "optimizer state", "input"
_PARAMETER_WORDS = frozenset({"params", "param", "parameters", "weights", "model", "variables"})
_OPTIMIZER_WORDS = frozenset({
    "opt_state", "optimizer", "opt", "mu", "nu", "master", "momentum", "velocity", "adam",
    "exp_avg", "exp_avg_sq", "accumulator", "step", "count", "ema", "slots",
})
_INPUT_WORDS = frozenset({"batch", "inputs", "input", "data", "tokens", "targets", "labels",
                          "rng", "key", "x", "y"})
_PATH_SPLIT = re.compile(r"[^A-Za-z0-9]+")
# a pytree path as jax.tree_util.keystr writes it: `name['key'][0].attr`
_KEYSTR = re.compile(r"^[A-Za-z_][\w.]*(?:\[(?:'[^']*'|\d+)\]|\.[A-Za-z_]\w*)*$|^(?:\[.*\])+$")


def path_components(text: str) -> list[str]:
    """`state.params['layers'][0]['w']` or `state_params__layers___0___w__.1` -> components."""
    text = re.sub(r"\.\d+$", "", text)  # XLA's uniquifying suffix
    return [part for part in _PATH_SPLIT.split(text) if part]


def argument_role(path: str) -> str:
    """PARAMETER, OPTIMIZER_STATE or INPUT, from the first component that says which."""
    for component in path_components(path):
        word = component.lower()
        if word in _PARAMETER_WORDS:
            return PARAMETER
        if word in _OPTIMIZER_WORDS:
            return OPTIMIZER_STATE
        if word in _INPUT_WORDS:
            return INPUT
    return PARAMETER


def argument_path(parameter: Instruction) -> str:
    """The pytree path JAX gave an argument: its op_name, else its name."""
    return parameter.op_name or parameter.name


def pytree_path(parameter: Instruction) -> str | None:
    """The argument's pytree path as the user's code spells it (`params['layers']['w1']`), or
    None when the parameter's op_name holds none (a module not jitted from pytrees, or an
    op_name that is a name stack)."""
    path = parameter.op_name
    if not path or "/" in path or "(" in path:
        return None
    path = path.replace("\\'", "'")
    return path if _KEYSTR.match(path) else None
