"""`hloscope.from_jax`: compile a JAX function for a target and load its optimized module.

    module = hloscope.from_jax(step, state, batch, target="tpu:v5e:2x2", donate_argnums=(0,))

Arguments may be arrays or `jax.ShapeDtypeStruct`s (nothing is allocated either way: only
shapes, dtypes and shardings are kept). A `NamedSharding` over any mesh — an
`AbstractMesh((4,), ("data",))` as well as a concrete one — is rebuilt on the target's devices
with the same axis names and sizes; arguments without one are replicated over that mesh, or,
when no argument names a mesh, placed on the target's first device. Inside `fn` the mesh is set
(`jax.set_mesh`), so bare PartitionSpecs work in sharding constraints.

Where it compiles:
- `cpu` (one device) compiles in this process when JAX here has a CPU backend: jax is already
  imported by the caller, XLA:CPU does not crash the process the way libtpu can, and `fn` need
  not be picklable. The dump is requested through compile options, so only this program is
  dumped; JAX's persistent compilation cache is paused for the compile (a cache hit dumps
  nothing).
- TPU and GPU targets (and `cpu:N`) compile in a child process (`runner.compile_in_subprocess`),
  as `hloscope build` does: their environment must be set before jax is imported, libtpu can
  crash a process, and the TPU and CUDA plugins do not share one. `fn`, its arguments' shapes and
  the jit options travel by cloudpickle (the module defining `fn` is pickled by value unless it
  is part of an installed package).

`policy` names a remat policy as `hloscope build --policy` does (`none`, `full`,
`dots_saveable`, `save_named`, ...) or is a `jax.checkpoint` policy callable; `fn` is then
called with `remat=`, a function that wraps a block in `jax.checkpoint` with that policy (and
returns it unchanged for `none`): `block = remat(block)` in the model code.
"""
from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hloscope.configs.targets import Target, parse_target
from hloscope.errors import EXIT_INPUT_MALFORMED, HloscopeError, UsageError
from hloscope.formats.capture import CaptureInfo, capture_dump, capture_log, write_capture
from hloscope.formats.compile_record import CompileResult
from hloscope.model.module import HloModule
from hloscope.optional import require, require_compiler

CAPTURE_BUILDER = "hloscope.workloads.capture:rebuild"
FAILED = ("error", "crash", "timeout")


class CaptureError(HloscopeError):
    """The function could not be lowered or compiled (its error, not an OOM)."""

    exit_code = EXIT_INPUT_MALFORMED


@dataclass(frozen=True)
class AbstractArg:
    """An array argument reduced to what lowering needs; `mesh` is ((axis, size), ...)."""

    shape: tuple[int, ...]
    dtype: str
    spec: tuple[Any, ...] | None = None
    mesh: tuple[tuple[str, int], ...] | None = None


@dataclass(frozen=True)
class CapturedSpec:
    """What the compile job compiles (see `compile_job.run`)."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    donate_argnums: tuple[int, ...] = ()
    jit_kwargs: dict[str, Any] | None = None


class Remat:
    """`remat(block)`: `block` under `jax.checkpoint` with a named or given policy."""

    def __init__(self, policy: str | Callable[..., Any]) -> None:
        if isinstance(policy, str):
            from hloscope.configs.config import REMAT_POLICIES

            if policy not in REMAT_POLICIES:
                raise UsageError(f"unknown remat policy {policy!r}; known: "
                                 f"{', '.join(REMAT_POLICIES)}, or a jax.checkpoint policy")
        self.policy = policy

    def __call__(self, block: Callable[..., Any]) -> Callable[..., Any]:
        import jax

        if self.policy == "none":
            return block
        if isinstance(self.policy, str):
            from hloscope.workloads.remat import checkpoint_policy

            return jax.checkpoint(block, policy=checkpoint_policy(self.policy))
        return jax.checkpoint(block, policy=self.policy)


def from_jax(fn: Callable[..., Any], *args: Any, target: str = "cpu", policy: Any = None,
             dump_dir: str | Path | None = None, **jit_kwargs: Any) -> HloModule:
    """Compiles `fn(*args)` for `target` into `dump_dir` (default: a temporary folder removed
    when Python exits) and returns the loaded optimized module. A compile that runs out of
    memory still returns the module (see `hloscope.oom`); any other failure is a CaptureError."""
    parsed = parse_target(target)
    folder = _folder(dump_dir)
    fn = _with_policy(fn, policy)
    portable = portable_args(args, _static_positions(jit_kwargs))
    donate = tuple(jit_kwargs.pop("donate_argnums", ()) or ())
    donate = (donate,) if isinstance(donate, int) else donate
    devices = _local_cpu_devices(parsed)
    if devices is not None:
        result, in_process = _compile_here(fn, portable, parsed, devices, folder, donate,
                                           jit_kwargs), True
    else:
        result, in_process = _compile_in_child(fn, portable, parsed, folder, donate,
                                               jit_kwargs), False
    return _finish(fn, parsed, folder, result, in_process)


def _folder(dump_dir: str | Path | None) -> Path:
    if dump_dir is not None:
        folder = Path(dump_dir)
        if folder.exists() and any(folder.iterdir()):
            raise UsageError(f"{folder} exists and is not empty; from_jax needs a new folder")
        folder.mkdir(parents=True, exist_ok=True)
        return folder
    folder = Path(tempfile.mkdtemp(prefix="hloscope-from-jax-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def _with_policy(fn: Callable[..., Any], policy: Any) -> Callable[..., Any]:
    if policy is None:
        return fn
    wrapped = functools.partial(fn, remat=Remat(policy))
    return functools.update_wrapper(wrapped, fn)


def _static_positions(jit_kwargs: dict[str, Any]) -> set[int]:
    static = jit_kwargs.get("static_argnums", ())
    return {static} if isinstance(static, int) else set(static or ())


def portable_args(args: Sequence[Any], static: Collection[int] = frozenset()) -> tuple[Any, ...]:
    """`args` with every array leaf replaced by an AbstractArg (static positions kept)."""
    import jax

    return tuple(arg if position in static else jax.tree.map(_abstract, arg)
                 for position, arg in enumerate(args))


def _abstract(leaf: Any) -> Any:
    if not hasattr(leaf, "shape") or not hasattr(leaf, "dtype"):
        return leaf
    sharding = getattr(leaf, "sharding", None)
    spec = getattr(sharding, "spec", None)
    mesh = getattr(sharding, "mesh", None)
    if spec is None or mesh is None:
        return AbstractArg(tuple(leaf.shape), str(leaf.dtype))
    axes = tuple(zip(mesh.axis_names, mesh.axis_sizes, strict=True))
    return AbstractArg(tuple(leaf.shape), str(leaf.dtype), tuple(spec), axes)


def _local_cpu_devices(target: Target) -> list[Any] | None:
    """The devices of an in-process CPU compile, or None: compile in a child."""
    if target.backend != "cpu":
        return None
    import jax

    try:
        devices = jax.devices("cpu")
    except RuntimeError:  # this process runs JAX without its CPU backend
        return None
    return devices[: target.num_devices] if len(devices) >= target.num_devices else None


def rebuild(mesh: Any, payload: str) -> CapturedSpec:
    """The compile job's builder: unpickles the payload and places its arguments on `mesh`'s
    devices (the target's)."""
    import cloudpickle
    import jax

    fn, portable, donate, jit_kwargs = cloudpickle.loads(Path(payload).read_bytes())
    args, named_mesh = concrete_args(portable, list(mesh.devices.flat))
    if named_mesh is not None:
        jax.set_mesh(named_mesh)  # a one-compile child process: set for good
    return CapturedSpec(fn, args, donate, jit_kwargs)


def concrete_args(portable: Sequence[Any], devices: list[Any]) -> tuple[tuple[Any, ...], Any]:
    """ShapeDtypeStructs placed on `devices`, and the mesh they were placed on (or None)."""
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

    axes = _mesh_axes(portable)
    if axes is None:
        sharding_of: Callable[[AbstractArg], Any] = \
            lambda arg: SingleDeviceSharding(devices[0])  # noqa: E731
        mesh = None
    else:
        mesh = _mesh(Mesh, np, devices, axes)
        sharding_of = lambda arg: NamedSharding(  # noqa: E731
            mesh, PartitionSpec(*(arg.spec or ())))

    def place(leaf: Any) -> Any:
        if not isinstance(leaf, AbstractArg):
            return leaf
        return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=sharding_of(leaf))

    is_arg = lambda node: isinstance(node, AbstractArg)  # noqa: E731
    return tuple(jax.tree.map(place, arg, is_leaf=is_arg) for arg in portable), mesh


def _mesh_axes(portable: Sequence[Any]) -> tuple[tuple[str, int], ...] | None:
    import jax

    leaves = jax.tree.leaves(portable, is_leaf=lambda node: isinstance(node, AbstractArg))
    meshes = {leaf.mesh for leaf in leaves if isinstance(leaf, AbstractArg) and leaf.mesh}
    if len(meshes) > 1:
        raise UsageError(f"the arguments are sharded over different meshes: {sorted(meshes)}")
    return next(iter(meshes), None)


def _mesh(mesh_type: Any, np: Any, devices: list[Any], axes: tuple[tuple[str, int], ...]) -> Any:
    sizes = tuple(size for _, size in axes)
    count = int(np.prod(sizes))
    if count != len(devices):
        raise UsageError(f"the arguments' mesh {dict(axes)} has {count} devices; the target "
                         f"has {len(devices)}")
    return mesh_type(np.array(devices, dtype=object).reshape(sizes), tuple(n for n, _ in axes))


def _compile_here(fn: Callable[..., Any], portable: tuple[Any, ...], target: Target,
                  devices: list[Any], folder: Path, donate: tuple[int, ...],
                  jit_kwargs: dict[str, Any]) -> CompileResult:
    import jax

    from hloscope.workloads.compiler import compile_function

    args, mesh = concrete_args(portable, devices)
    cache_enabled = jax.config.jax_enable_compilation_cache  # type: ignore[attr-defined]
    jax.config.update("jax_enable_compilation_cache", False)
    try:
        with jax.set_mesh(mesh):
            return compile_function(fn, args, target=target.spec, backend=target.backend,
                                    dump_dir=capture_dump(folder), donate_argnums=donate,
                                    jit_kwargs=jit_kwargs)
    finally:
        jax.config.update("jax_enable_compilation_cache", cache_enabled)


def _compile_in_child(fn: Callable[..., Any], portable: tuple[Any, ...], target: Target,
                      folder: Path, donate: tuple[int, ...],
                      jit_kwargs: dict[str, Any]) -> CompileResult:
    from hloscope.workloads.runner import CompileRequest, compile_in_subprocess

    require_compiler(target.backend, f"from_jax for {target.spec}")
    with tempfile.TemporaryDirectory(prefix="hloscope-payload-") as scratch:
        payload = Path(scratch) / "payload.pkl"
        payload.write_bytes(_pickled((fn, portable, donate, jit_kwargs), fn))
        request = CompileRequest(target.spec, str(capture_dump(folder)), builder=CAPTURE_BUILDER,
                                 builder_kwargs={"payload": str(payload)})
        return compile_in_subprocess(request, log_path=capture_log(folder))


def _pickled(value: Any, fn: Callable[..., Any]) -> bytes:
    cloudpickle = require("cloudpickle", "tpu", "from_jax for TPU and GPU targets needs "
                                                "cloudpickle")
    modules = _modules_by_value(fn)
    for module in modules:
        cloudpickle.register_pickle_by_value(module)
    try:
        return cloudpickle.dumps(value)
    except Exception as error:  # what cannot be pickled depends on the caller's code
        raise CaptureError(f"cannot send {_name(fn)} to the compile process: {error}") from None
    finally:
        for module in modules:
            cloudpickle.unregister_pickle_by_value(module)


def _modules_by_value(fn: Callable[..., Any]) -> list[Any]:
    """The caller's module, unless it is installed (site-packages) or part of hloscope."""
    import sys

    inner = getattr(fn, "func", fn)
    module = sys.modules.get(getattr(inner, "__module__", "") or "")
    if module is None or module.__name__ in ("__main__", "builtins"):
        return []
    path = getattr(module, "__file__", None) or ""
    installed = "site-packages" in path or "dist-packages" in path
    return [] if installed or module.__name__.split(".")[0] == "hloscope" else [module]


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


def _finish(fn: Callable[..., Any], target: Target, folder: Path, result: CompileResult,
            in_process: bool) -> HloModule:
    from hloscope.loader.hlo_input import load_dump_folder
    from hloscope.parsers.dump_folder import dump_files

    info = CaptureInfo(str(folder), _name(fn), target.spec, result.status, result.error,
                       in_process)
    write_capture(info, result.to_dict())
    if result.status in FAILED or not dump_files(info.dump):
        detail = result.error or "XLA wrote no optimized module"
        tail = f"\n{result.log_tail}" if result.log_tail else ""
        raise CaptureError(f"compiling {info.function} for {target.spec} failed "
                           f"({result.status}): {detail}{tail}")
    return load_dump_folder(info.dump)
