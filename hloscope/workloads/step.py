"""A user's train step in the compile child: the factory called with the variant's hooks.

`build_step` is the compile job's builder for a `spec.step.StepConfig` (see that module for the
factory's contract): it loads the factory (by reference or from its pickled bytes), calls it
with `StepRemat` (and `LayerScan` when it takes a second parameter), places the returned
arguments on the target's devices as `from_jax` does (`capture.concrete_args`: shardings over
any mesh rebuilt on the target's devices) and returns what `compiler.compile_function` compiles.

Refusals happen where they can be told, each with the fix: before the compile (the parent:
`spec.step.parse_step_variants`) for a structural variant on a factory without `layers`; after
`make_step` returns, for a grid point or mesh the sweep set that the factory never read; while
tracing, for a structural variant whose `layers.scan` was never called (the layers were scanned
some other way, so the variant would silently compile as something else).

`step_source` (the API side) pickles a callable for the child. This module imports jax.
"""
from __future__ import annotations

import ast
import base64
import functools
import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hloscope.configs.step import StepConfig
from hloscope.errors import HloscopeError, InputError, UsageError
from hloscope.workloads.capture import CapturedSpec, concrete_args, portable_args


class StepHookError(UsageError):
    """The factory did not use a hook the variant or the sweep needs."""


class StepRemat:
    """The factory's first parameter: `remat(block)` and the sweep's choices for this compile."""

    def __init__(self, config: StepConfig, mesh: Any) -> None:
        self._config = config
        self._mesh = mesh
        self.read: set[str] = set()

    @property
    def policy(self) -> str:
        """The variant's name: `none`, `full`, `dots_saveable`, `nested:4`, ..."""
        return self._config.policy

    @property
    def jax_policy(self) -> Callable[..., Any] | None:
        """The `jax.checkpoint` policy of the variant (None: jax's default, save nothing)."""
        from hloscope.workloads.remat import checkpoint_policy

        return None if self._config.remat == "none" else checkpoint_policy(self._config.remat)

    @property
    def batch(self) -> int | None:
        self.read.add("batch")
        return self._config.batch or None

    @property
    def seq_len(self) -> int | None:
        self.read.add("seq_len")
        return self._config.seq_len or None

    @property
    def mesh(self) -> Any:
        """The target's devices as a jax Mesh: the --mesh axes (data, fsdp, tensor), else one
        `data` axis (or data x tensor with --tensor)."""
        self.read.add("mesh")
        return self._mesh

    def __call__(self, block: Callable[..., Any], **checkpoint_kwargs: Any) -> Callable[..., Any]:
        """`block` under `jax.checkpoint` with the variant's policy; `block` itself for none."""
        import jax

        from hloscope.workloads.remat import checkpointed

        if self._config.remat == "none":
            return block
        if checkpoint_kwargs:
            return jax.checkpoint(block, policy=self.jax_policy, **checkpoint_kwargs)
        return checkpointed(block, self._config)


class LayerScan:
    """The factory's optional second parameter: the layer scan the structural variants need."""

    def __init__(self, config: StepConfig) -> None:
        self._config = config
        self.used = False

    def scan(self, block: Callable[[Any, Any], Any], carry: Any, stacked: Any) -> Any:
        """`block(carry, params_i) -> carry` over the leading axis of `stacked`, checkpointed
        as the variant says (nested:B: blocks of B layers; offload_carries: each block's input
        in pinned host memory). Returns the last carry."""
        from hloscope.workloads.remat import scan_rematted

        self.used = True
        if self._config.remat_block:
            import jax

            layers = {leaf.shape[0] for leaf in jax.tree.leaves(stacked)}
            if any(size % self._config.remat_block for size in layers):
                raise StepHookError(f"nested:{self._config.remat_block} does not divide the "
                                    f"{sorted(layers)} layers layers.scan got")
        return scan_rematted(carry, stacked, self._config, block)


def build_step(mesh: Any, **fields: Any) -> CapturedSpec:
    """The compile job's builder: the user's step for the variant, on `mesh`'s devices."""
    import jax

    from hloscope.workloads.sharding import train_mesh

    config = StepConfig.from_dict(fields)
    target_mesh = train_mesh(mesh, config)
    remat, layers = StepRemat(config, target_mesh), LayerScan(config)
    factory = load_factory(config)
    with jax.set_mesh(target_mesh):
        made = factory(remat, layers) if config.takes_layers else factory(remat)
    fn, args, jit_kwargs = _unpacked(made, config.factory)
    _check_read(config, remat)
    jit_kwargs = dict(jit_kwargs)
    donate = jit_kwargs.pop("donate_argnums", ()) or ()
    donate = (donate,) if isinstance(donate, int) else tuple(donate)
    static = jit_kwargs.get("static_argnums", ())
    static = {static} if isinstance(static, int) else set(static or ())
    placed, named_mesh = concrete_args(portable_args(args, static), list(mesh.devices.flat))
    jax.set_mesh(named_mesh if named_mesh is not None else target_mesh)  # one compile per child
    return CapturedSpec(_checked(fn, config, layers), placed, donate, jit_kwargs)


def load_factory(config: StepConfig) -> Callable[..., Any]:
    """The factory: unpickled from the payload, or imported from `FILE.py:function` (its folder
    put on sys.path, so its sibling modules import) or `module:function`."""
    if config.payload is not None:
        import cloudpickle

        return cloudpickle.loads(base64.b64decode(config.payload))
    location, _, name = config.factory.rpartition(":")
    if location.endswith(".py"):
        path = Path(location)
        sys.path.insert(0, str(path.parent))
        module_name = f"hloscope_step_{path.stem}"
        found = importlib.util.spec_from_file_location(module_name, path)
        if found is None or found.loader is None:
            raise UsageError(f"cannot import {path}")
        module = importlib.util.module_from_spec(found)
        sys.modules[module_name] = module
        found.loader.exec_module(module)
    else:
        module = importlib.import_module(location)
    factory = getattr(module, name, None)
    if not callable(factory):
        raise UsageError(f"{config.factory}: {name} is not a function of {location}")
    return factory


def _unpacked(made: Any, name: str) -> tuple[Callable[..., Any], tuple[Any, ...],
                                             dict[str, Any]]:
    if isinstance(made, tuple) and len(made) in (2, 3) and callable(made[0]):
        fn, args = made[0], made[1]
        jit_kwargs = made[2] if len(made) == 3 else {}
        if isinstance(args, tuple | list) and isinstance(jit_kwargs, dict):
            return fn, tuple(args), jit_kwargs
    raise UsageError(f"{name} must return (step_fn, args) or (step_fn, args, jit_kwargs), "
                     f"args a tuple; it returned {type(made).__name__}")


def _check_read(config: StepConfig, remat: StepRemat) -> None:
    """A grid point or mesh the sweep set but the factory never read: the compile would not be
    what the row says."""
    given = {"batch": config.batch or None, "seq_len": config.seq_len or None,
             "mesh": config.dcn_data_parallel or config.ici_fsdp_parallel
             or (config.tensor_parallel if config.tensor_parallel > 1 else None)}
    unread = [name for name, value in given.items() if value is not None
              and name not in remat.read]
    if unread:
        names = ", ".join(f"remat.{name}" for name in unread)
        raise StepHookError(f"the sweep sets {names} but {config.factory} never read it: "
                            "build the step from it, or leave out --batch/--seq/--mesh")


def _checked(fn: Callable[..., Any], config: StepConfig, layers: LayerScan) -> Callable[..., Any]:
    """`fn`, failing the trace when a structural variant's `layers.scan` was not called."""
    if not config.structural:
        return fn

    @functools.wraps(fn)
    def traced(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        if not layers.used:
            raise StepHookError(f"{config.policy} needs the layers run by layers.scan(block, "
                                f"carry, stacked); {config.factory} never called it")
        return out

    return traced


def takes_layers(factory: Callable[..., Any]) -> bool:
    """Whether the factory takes the `layers` hook: a second positional parameter named
    `layers` (by name, so that `make_step(remat, unrolled=False)` keeps its own options)."""
    try:
        parameters = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    if not positional:
        raise UsageError(f"{_name(factory)} must take remat: def make_step(remat) or "
                         "make_step(remat, layers)")
    return len(positional) >= 2 and positional[1].name == "layers"


def step_source(factory: Callable[..., Any]) -> dict[str, Any]:
    """The StepConfig fields naming a callable: by reference (`FILE.py:function`, as `--step`
    gives it) when it is a top-level function of a module loaded from a file, so the child
    imports it as the module's author meant (classes pickled by value lose their metaclass
    behaviour: an equinox Module's fields become unassignable); else pickled by value (its
    module too, unless installed). With its hash, and whether it takes `layers`."""
    from hloscope.configs.step import file_hash
    from hloscope.workloads.capture import _pickled

    path = _defining_file(factory)
    if path is not None:
        return {"factory": f"{path}:{factory.__name__}", "source_hash": file_hash(path),
                "takes_layers": takes_layers(factory)}
    data = _pickled(factory, factory)
    return {"factory": _name(factory), "payload": base64.b64encode(data).decode(),
            "source_hash": hashlib.sha256(data).hexdigest()[:16],
            "takes_layers": takes_layers(factory)}


def _defining_file(factory: Callable[..., Any]) -> Path | None:
    """The .py file whose module defines `factory` at top level, None for __main__, lambdas,
    closures and anything not found by its name in its module."""
    module = sys.modules.get(getattr(factory, "__module__", None) or "")
    if module is None or module.__name__ == "__main__":
        return None
    if getattr(module, getattr(factory, "__name__", ""), None) is not factory:
        return None
    file = getattr(module, "__file__", None)
    return Path(file).resolve() if file and file.endswith(".py") else None


def reference_takes_layers(reference: str) -> bool:
    """`takes_layers` of a `FILE.py:function` / `module:function` factory: read from the file's
    syntax tree where the function is a top-level `def` of a FILE.py (this process then imports
    neither the file nor the jax it imports), else imported here."""
    location, _, name = reference.rpartition(":")
    if location.endswith(".py"):
        defined = _top_level_def(Path(location), name)
        if defined is not None:
            arguments = defined.args
            positional = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
            if not positional and arguments.vararg is None:
                raise UsageError(f"{name} must take remat: def make_step(remat) or "
                                 "make_step(remat, layers)")
            return len(positional) >= 2 and positional[1] == "layers"
    try:
        factory = load_factory(StepConfig(reference, ""))
    except HloscopeError:
        raise
    except Exception as error:  # the user's module failed to import: their error, not ours
        raise InputError(f"cannot import {reference}: {type(error).__name__}: {error}") \
            from error
    return takes_layers(factory)


def _top_level_def(path: Path, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The last top-level `def NAME` of `path`, undecorated (None where it has none, or does
    not parse: the import then says why; a decorator may change the signature)."""
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None
    found = [node for node in tree.body
             if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name]
    return found[-1] if found and not found[-1].decorator_list else None


def _name(factory: Callable[..., Any]) -> str:
    return str(getattr(factory, "__qualname__", None) or getattr(factory, "__name__", "make_step"))
