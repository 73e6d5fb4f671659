"""The child process of one compile: `python -m hloscope.workloads.compile_job REQUEST RESULT`.

REQUEST is a JSON file written by `runner.compile_in_subprocess` (target string, builder, builder
arguments, dump folder, compiler options). The child sets the target's environment *before*
importing jax (so it also works when started by hand), builds the target's mesh, calls the
builder (`"package.module:function"`, called as `builder(mesh, **builder_kwargs)` and returning a
`CompileSpec`), compiles, and writes the CompileResult as JSON to RESULT (or, when jax or the
target's plugin is not installed, the `missing.guarded` marker). One compile per process:
libtpu can crash a process, and a fresh process is the only reliable isolation. Exit status 0
means RESULT was written, whatever the compile's verdict. The child dies with the process that
started it (`die_with_parent`: a killed sweep worker leaves no compile running).
"""
from __future__ import annotations

import ctypes
import importlib
import json
import os
import signal
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hloscope.configs.targets import Target, parse_target, target_environment
from hloscope.formats.compile_record import CompileResult
from hloscope.workloads.missing import COMPILE_STACK, guarded

PARENT_PID_ENV = "HLOSCOPE_COMPILE_PARENT"
_PR_SET_PDEATHSIG = 1


def load_builder(reference: str) -> Callable[..., Any]:
    """The function a `"package.module:function"` reference names."""
    module_name, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def run(request: dict[str, Any]) -> CompileResult:
    target = parse_target(request["target"])
    _set_environment(target)
    from hloscope.workloads.checkpoint_names import variant_of
    from hloscope.workloads.compiler import compile_function
    from hloscope.workloads.topology import make_mesh

    try:
        mesh = make_mesh(target)
        spec = load_builder(request["builder"])(mesh, **request.get("builder_kwargs", {}))
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] in COMPILE_STACK:
            raise  # `guarded` reports it as a missing dependency
        return _error(target, request)
    except Exception:
        return _error(target, request)
    return compile_function(spec.fn, spec.args, target=target.spec, backend=target.backend,
                            dump_dir=request["dump_dir"], donate_argnums=spec.donate_argnums,
                            compiler_options=request.get("compiler_options"),
                            jit_kwargs=getattr(spec, "jit_kwargs", None),
                            variant=variant_of(request.get("builder_kwargs", {})))


def _error(target: Target, request: dict[str, Any]) -> CompileResult:
    from hloscope.workloads.compiler import package_versions

    return CompileResult(target=target.spec, status="error", dump_dir=request["dump_dir"],
                         error=traceback.format_exc(limit=8),
                         versions=package_versions(target.backend))


def _set_environment(target: Target) -> None:
    """Applies the target's environment unless jax is already imported (then it is too late).

    XLA flags already set (by the parent, or by hand) are kept; missing ones are appended.
    """
    if "jax" in sys.modules:
        return
    wanted = target_environment(target)
    flags = os.environ.get("XLA_FLAGS", "").split()
    present = {flag.split("=", 1)[0] for flag in flags}
    flags += [f for f in wanted.pop("XLA_FLAGS").split() if f.split("=", 1)[0] not in present]
    os.environ.update(wanted, XLA_FLAGS=" ".join(flags))


def die_with_parent() -> None:
    """Asks Linux to SIGKILL this process when its parent dies; exits at once when the parent
    named in $HLOSCOPE_COMPILE_PARENT is already gone."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: nothing to ask for
        return
    expected = os.environ.get(PARENT_PID_ENV)
    if expected and expected.isdigit() and os.getppid() != int(expected):
        os._exit(1)


def main(argv: list[str] | None = None) -> int:
    die_with_parent()
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m hloscope.workloads.compile_job REQUEST.json RESULT.json",
              file=sys.stderr)
        return 2
    request = json.loads(Path(args[0]).read_text())
    result_path = Path(args[1])

    def compile_and_write() -> int:
        result = run(request)
        result_path.write_text(json.dumps(result.to_dict(), indent=2))
        return 0

    target = parse_target(request["target"])
    return guarded(compile_and_write, result_path, target.backend, f"compiling for {target.spec}")


if __name__ == "__main__":
    sys.exit(main())
