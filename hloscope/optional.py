"""Optional dependencies: imported where they are needed, named in one way when they are missing.

hloscope's core needs only what `pip install hloscope` brings, matplotlib included: every
command that reads HLO, `report` and `--plot` work on the base install (a plot needs no
compiler, and a PNG or PDF needs a rasteriser that hloscope would otherwise have to write).
Compiling needs jax and the target's plugin (the `jax`, `tpu` and `gpu` extras); Ray (the Ray
executor), cloudpickle (from_jax's compile process) and xprof (a trace cross-check) come with
extras too. A module that needs one calls `require` (or `require_compiler` for a backend) at
the moment it needs it -- never at import time, so `import hloscope` stays light -- and a
missing one is a MissingDependencyError (exit code 5, no traceback) that names the
`pip install 'hloscope[extra]'` to run. The compile and profile child processes make the same
check, so a worker without jax reports the same error. `available` is for the optional extras
hloscope does without (it skips a cross-check rather than fail).
"""
from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from hloscope.errors import MissingDependencyError


def require(module_name: str, extra: str, purpose: str | None = None) -> ModuleType:
    """The module `module_name`, imported; a UsageError naming `hloscope[extra]` if missing.

    `purpose` is the message's subject, saying what needs the module ("plots need matplotlib");
    without it the message says that the module is not installed.
    """
    try:
        return importlib.import_module(module_name)
    except ImportError:
        raise MissingDependencyError(missing_message(module_name, extra, purpose)) from None


COMPILER_MODULES: dict[str, tuple[str, ...]] = {
    "cpu": ("jax", "jaxlib"),
    "tpu": ("jax", "jaxlib", "libtpu"),
    "gpu": ("jax", "jaxlib", "jax_cuda12_plugin|jax_cuda13_plugin"),
}
"""What a compile for each backend imports (pyproject.toml's extras bring them); `a|b`: either
(the `gpu` extra brings CUDA 12's plugin; a GPU machine's own jax may carry CUDA 13's)."""
COMPILER_EXTRAS = {"cpu": "jax", "tpu": "tpu", "gpu": "gpu"}
"""The extra that brings them: `hloscope[tpu]` is jax[tpu] (jax, jaxlib, libtpu)."""


def missing_compiler_modules(backend: str) -> list[str]:
    """The modules a compile for `backend` needs that are not installed (none imported)."""
    return [names.split("|")[0] for names in COMPILER_MODULES.get(backend, COMPILER_MODULES["cpu"])
            if not any(available(name) for name in names.split("|"))]


def require_compiler(backend: str, purpose: str) -> None:
    """A MissingDependencyError naming the extra when a compile for `backend` cannot run here.

    `purpose` says what needs it ("build for tpu:v5e:2x2"); nothing is imported, so the check
    costs a file-system lookup and runs before any work starts."""
    missing = missing_compiler_modules(backend)
    if missing:
        raise MissingDependencyError(compiler_message(backend, purpose, missing))


def compiler_message(backend: str, purpose: str, missing: list[str]) -> str:
    extra = COMPILER_EXTRAS.get(backend, "jax")
    return missing_message(missing[0], extra, f"{purpose} needs {', '.join(missing)}, which "
                                              f"{'is' if len(missing) == 1 else 'are'} not "
                                              "installed")


def available(module_name: str) -> bool:
    """Whether `module_name` can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(module_name) is not None
    except (ImportError, ValueError):  # a parent package missing, or set to None in sys.modules
        return False


def missing_message(module_name: str, extra: str, purpose: str | None = None) -> str:
    subject = purpose or f"{module_name.partition('.')[0]} is not installed"
    return f"{subject}: pip install 'hloscope[{extra}]'"
