"""Lower and compile one function with abstract arguments, dumping XLA's files (child side).

`compile_function` runs in the compile job's child process (see `runner`): it jits the function,
lowers it with `jax.ShapeDtypeStruct` arguments (their NamedShardings place them on the target's
mesh, so nothing is allocated), compiles with `xla_dump_to` / `xla_dump_hlo_as_text` as compiler
options (only this program is dumped, on every backend), and reads `memory_analysis()` and
`cost_analysis()`. A compile that fails with RESOURCE_EXHAUSTED is an "oom" result, not an
exception: the dump folder written before the failure is what explains it.
"""
from __future__ import annotations

import importlib.metadata
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hloscope.formats.checkpoint_names import NAMES_FILE
from hloscope.formats.compile_record import CompileResult, CostFigures, MemoryFigures

if TYPE_CHECKING:
    from hloscope.workloads.checkpoint_names import Variant

MAX_ERROR_CHARS = 4000
_PACKAGES = {
    "cpu": ("jax", "jaxlib"),
    "tpu": ("jax", "jaxlib", "libtpu"),
    "gpu": ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt", "nvidia-cuda-nvcc-cu12"),
}


def package_versions(backend: str) -> dict[str, str]:
    """Installed versions of the packages a compile for `backend` depends on (no imports)."""
    versions = {"python": platform.python_version()}
    for package in _PACKAGES.get(backend, ("jax", "jaxlib")):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "absent"
    return versions


def compile_function(fn: Callable[..., Any], args: Sequence[Any], *, target: str, backend: str,
                     dump_dir: str | Path, donate_argnums: tuple[int, ...] = (),
                     compiler_options: dict[str, Any] | None = None,
                     jit_kwargs: dict[str, Any] | None = None,
                     variant: Variant | None = None) -> CompileResult:
    """Compiles `fn(*args)` for the mesh its arguments' shardings name; dumps into `dump_dir`.
    `jit_kwargs` are further `jax.jit` options (static_argnums, out_shardings, ...). With
    `variant` (the remat variant's checkpoint), the traced step's checkpoint names go to
    NAMES_FILE beside the dump (`checkpoint_names`: from the trace the lowering uses)."""
    import jax

    dump = Path(dump_dir)
    dump.mkdir(parents=True, exist_ok=True)
    options = {"xla_dump_to": str(dump), "xla_dump_hlo_as_text": True, **(compiler_options or {})}
    name = getattr(fn, "__name__", "fn")
    common: dict[str, Any] = dict(target=target, dump_dir=str(dump), module_name=f"jit_{name}",
                                  versions=package_versions(backend))
    started = time.perf_counter()
    try:
        traced = jax.jit(fn, donate_argnums=donate_argnums, **(jit_kwargs or {})).trace(*args)
        if variant is not None:
            _write_names(traced, variant, dump.parent / NAMES_FILE)
        lowered = traced.lower()
    except Exception as error:  # a bug in the program or its shapes: report, do not crash
        return CompileResult(status="error", error=_error_text(error, typed=True), **common)
    lowered_at = time.perf_counter()
    try:
        compiled = lowered.compile(compiler_options=options)
    except Exception as error:  # XLA's verdict (JaxRuntimeError), e.g. RESOURCE_EXHAUSTED
        status = "oom" if "RESOURCE_EXHAUSTED" in str(error) else "error"
        return CompileResult(status=status, error=_error_text(error),
                             lower_seconds=lowered_at - started,
                             compile_seconds=time.perf_counter() - lowered_at,
                             device_assignment=device_assignment(None, args), **common)
    compile_seconds = time.perf_counter() - lowered_at
    return CompileResult(status="ok", memory=memory_figures(compiled.memory_analysis()),
                         cost=cost_figures(compiled.cost_analysis()),
                         lower_seconds=lowered_at - started, compile_seconds=compile_seconds,
                         device_assignment=device_assignment(compiled, args), **common)


def _write_names(traced: Any, variant: Variant, path: Path) -> None:
    """The checkpoint names of the traced step; a failure to list them fails no compile (the
    file is then absent, and the reports say the names are not known)."""
    from hloscope.formats.checkpoint_names import write_names
    from hloscope.workloads.checkpoint_names import named_values

    try:
        write_names(path, named_values(traced.jaxpr, variant), variant.name)
    except Exception:  # names are an explanation, never a reason to lose the compile
        path.unlink(missing_ok=True)


def device_assignment(compiled: Any, args: Sequence[Any]) -> list[dict[str, Any]] | None:
    """The program's devices in logical-id order, each with its id and slice index.

    The executable's own list (`local_devices()`: partition i runs on entry i) when it gives one,
    else the device assignment of the arguments' shardings (the mesh's flattened devices, which
    jax compiles for: also known when the compile failed with an OOM); None when neither is."""
    devices = None
    if compiled is not None:
        try:
            devices = list(compiled.runtime_executable().local_devices())
        except Exception:  # deviceless executables may not expose it: fall back
            devices = None
    devices = devices or _argument_devices(args)
    if not devices:
        return None
    return [{"id": int(d.id), "slice_index": int(getattr(d, "slice_index", 0) or 0)}
            for d in devices]


def _argument_devices(args: Sequence[Any]) -> list[Any] | None:
    import jax

    for leaf in jax.tree.leaves(args):
        assigned = getattr(getattr(leaf, "sharding", None), "_device_assignment", None)
        if assigned:
            return list(assigned)
    return None


def memory_figures(stats: Any) -> MemoryFigures | None:
    """MemoryFigures from a CompiledMemoryStats (None when the backend gives none)."""
    if stats is None:
        return None

    def read(name: str) -> int:
        return int(getattr(stats, name, 0) or 0)

    peak = getattr(stats, "peak_memory_in_bytes", None)
    return MemoryFigures(
        argument_bytes=read("argument_size_in_bytes"), output_bytes=read("output_size_in_bytes"),
        alias_bytes=read("alias_size_in_bytes"), temp_bytes=read("temp_size_in_bytes"),
        generated_code_bytes=read("generated_code_size_in_bytes"),
        host_argument_bytes=read("host_argument_size_in_bytes"),
        host_output_bytes=read("host_output_size_in_bytes"),
        host_alias_bytes=read("host_alias_size_in_bytes"),
        host_temp_bytes=read("host_temp_size_in_bytes"),
        peak_bytes=None if peak is None else int(peak),
    )


def cost_figures(cost: Any) -> CostFigures | None:
    """CostFigures from cost_analysis(): a dict, a one-element list of dicts (older jax) or None."""
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else None
    if not cost:
        return None
    return CostFigures(flops=cost.get("flops"), bytes_accessed=cost.get("bytes accessed"),
                       transcendentals=cost.get("transcendentals"),
                       optimal_seconds=cost.get("optimal_seconds"))


def _error_text(error: BaseException, typed: bool = False) -> str:
    """XLA's message as it printed it (`RESOURCE_EXHAUSTED: ...`); Python errors with their type."""
    text = (f"{type(error).__name__}: {error}" if typed else str(error)).strip()
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + " [...]"
