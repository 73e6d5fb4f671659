"""A child process without jax (or the target's plugin) reports it as the parent's error (no jax).

The compile and profile children check, before they import jax, that the backend's modules are
installed (`optional.require_compiler`), and turn a ModuleNotFoundError of the compile stack
raised later (a plugin's own import) into the same message. Either way the child writes
`{"missing_dependency": message}` to its RESULT file and exits with EXIT_MISSING_DEPENDENCY;
the parent (`raise_if_missing`) raises it as a MissingDependencyError: the message and exit code
the parent's own check gives, never a traceback in a build's error field or on the terminal.
A missing module that is not part of the compile stack (the user's own, for from_jax) is left
to fail as it did: its traceback is the useful report there.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from hloscope.errors import EXIT_MISSING_DEPENDENCY, MissingDependencyError
from hloscope.optional import compiler_message, require_compiler

MISSING_KEY = "missing_dependency"
COMPILE_STACK = frozenset({"jax", "jaxlib", "libtpu", "jax_cuda12_plugin", "jax_cuda12_pjrt",
                           "jax_cuda13_plugin", "jax_cuda13_pjrt",
                           "jax_plugins", "ml_dtypes", "opt_einsum", "scipy", "cloudpickle"})
"""Top-level modules that come with the jax, tpu and gpu extras."""


def guarded(run: Callable[[], int], result_path: Path, backend: str, purpose: str) -> int:
    """`run()`'s exit status, or EXIT_MISSING_DEPENDENCY with the marker written to
    `result_path` when the compile stack for `backend` is (or turns out to be) missing."""
    try:
        require_compiler(backend, purpose)
        return run()
    except MissingDependencyError as error:
        message = str(error)
    except ModuleNotFoundError as error:
        top = (error.name or "").partition(".")[0]
        if top not in COMPILE_STACK:
            raise
        message = compiler_message(backend, purpose, [top])
    result_path.write_text(json.dumps({MISSING_KEY: message}))
    print(f"error: {message}", file=sys.stderr)
    return EXIT_MISSING_DEPENDENCY


def raise_if_missing(returncode: int | None, result_path: Path) -> None:
    """Raises the child's MissingDependencyError, if that is how it ended."""
    if returncode != EXIT_MISSING_DEPENDENCY or not result_path.exists():
        return
    try:
        data = json.loads(result_path.read_text())
    except (OSError, ValueError):
        return
    if isinstance(data, dict) and MISSING_KEY in data:
        raise MissingDependencyError(str(data[MISSING_KEY]))
