"""Optional dependencies: imported where they are needed, named in one way when they are missing.

hloscope's core needs only what `pip install hloscope` brings. matplotlib (plots), Ray (the Ray
executor), cloudpickle (from_jax's compile process) and xprof (a trace cross-check) come with
extras. A module that needs one calls `require` at the moment it needs it -- never at import
time, so `import hloscope` stays light -- and a missing one is a UsageError (exit code 2, no
traceback) that names the `pip install 'hloscope[extra]'` to run. `available` is for the
optional extras hloscope does without (it skips a cross-check rather than fail).
"""
from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from hloscope.errors import UsageError


def require(module_name: str, extra: str, purpose: str | None = None) -> ModuleType:
    """The module `module_name`, imported; a UsageError naming `hloscope[extra]` if missing.

    `purpose` is the message's subject, saying what needs the module ("plots need matplotlib");
    without it the message says that the module is not installed.
    """
    try:
        return importlib.import_module(module_name)
    except ImportError:
        raise UsageError(missing_message(module_name, extra, purpose)) from None


def available(module_name: str) -> bool:
    """Whether `module_name` can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(module_name) is not None
    except (ImportError, ValueError):  # a parent package missing, or set to None in sys.modules
        return False


def missing_message(module_name: str, extra: str, purpose: str | None = None) -> str:
    subject = purpose or f"{module_name.partition('.')[0]} is not installed"
    return f"{subject}: pip install 'hloscope[{extra}]'"
