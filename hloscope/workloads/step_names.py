"""A user step's checkpoint names, from a trace in a child process (no lowering, no compile).

`trace_step_names(config, target)` starts `python -m hloscope.workloads.step_names REQUEST
RESULT` with the target's environment (a fresh process, as every compile gets: the parent may
not import jax, and a deviceless TPU needs libtpu set up before jax starts). The child builds
the step exactly as the compile child does (`step.build_step`: the factory called with the
hooks, at remat `none`, on the target's mesh), traces it with `jax.jit(...).trace` and writes
its names with `checkpoint_names.named_values` to RESULT in the `checkpoint_names.json` format.
The names are what a `names:` policy of the step chooses for (`spec.step.resolve_step_named`)
and what `hloscope policies --step` lists. Shapes are the traced ones: global, one call of the
block (one layer, inside a layer scan) — the trace does not know how the compile shards them.

A factory that refuses the hooks (`StepHookError`, a UsageError) is the user's error and comes
back as one; one that raises anything else while building or tracing comes back as an
InputError carrying the end of its traceback.
"""
from __future__ import annotations

import json
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

from hloscope.configs.step import StepConfig
from hloscope.configs.targets import parse_target
from hloscope.errors import InputError, UsageError
from hloscope.formats.checkpoint_names import (
    NAMES_FILE,
    CheckpointName,
    read_names,
    write_names,
)
from hloscope.workloads.runner import child_environment, handshake_files, run_child, tail_of_log

TRACE_TIMEOUT = 900.0
_ERROR_FILE = "error.json"


def trace_step_names(config: StepConfig, target: str = "cpu",
                     timeout: float = TRACE_TIMEOUT) -> list[CheckpointName]:
    """The checkpoint names of the step `config` names (at remat `none`) traced for `target`,
    once per (name, source line), in trace order."""
    from hloscope.workloads.missing import raise_if_missing

    parsed = parse_target(target)
    plain = StepConfig.from_dict({"step": {**config.to_dict()["step"], "remat": "none",
                                           "remat_block": 0}})
    with tempfile.TemporaryDirectory(prefix="hloscope-names-") as scratch:
        request_path = handshake_files(Path(scratch))[0]
        result_path = Path(scratch) / NAMES_FILE
        request_path.write_text(json.dumps({"target": parsed.spec, **plain.to_dict()}))
        log = Path(scratch) / "trace.log"
        command = [sys.executable, "-m", "hloscope.workloads.step_names", str(request_path),
                   str(result_path)]
        returncode = run_child(command, child_environment(parsed), log, timeout)
        raise_if_missing(returncode, result_path)
        return _answer(Path(scratch), result_path, returncode, log, config.factory)


def _answer(scratch: Path, result_path: Path, returncode: int | None, log: Path,
            factory: str) -> list[CheckpointName]:
    error_path = scratch / _ERROR_FILE
    if error_path.exists():
        error = json.loads(error_path.read_text())
        kind = UsageError if error["usage"] else InputError
        raise kind(f"tracing {factory}: {error['message']}")
    names = read_names(scratch) if result_path.exists() and returncode == 0 else None
    if names is None:
        raise InputError(f"tracing {factory} to list its checkpoint names failed (exit status "
                         f"{returncode}):\n{tail_of_log(log)}")
    return names


def _trace(request: dict[str, Any]) -> list[CheckpointName]:
    """Child side: the step built as the compile child builds it, traced, its names listed."""
    from hloscope.workloads.compile_job import _set_environment

    target = parse_target(request["target"])
    _set_environment(target)
    import jax

    from hloscope.workloads.checkpoint_names import Variant, named_values
    from hloscope.workloads.step import build_step
    from hloscope.workloads.topology import make_mesh

    spec = build_step(make_mesh(target), step=request["step"])
    traced = jax.jit(spec.fn, donate_argnums=spec.donate_argnums,
                     **(spec.jit_kwargs or {})).trace(*spec.args)
    return named_values(traced.jaxpr, Variant(False, None, "none"))


def main(argv: list[str] | None = None) -> int:
    from hloscope.workloads.compile_job import die_with_parent
    from hloscope.workloads.missing import COMPILE_STACK, guarded

    die_with_parent()
    request_path, result_path = map(Path, argv if argv is not None else sys.argv[1:3])
    request = json.loads(request_path.read_text())

    def trace_and_write() -> int:
        try:
            names = _trace(request)
        except ModuleNotFoundError as error:
            if (error.name or "").partition(".")[0] in COMPILE_STACK:
                raise  # `guarded` reports it as a missing dependency
            _write_error(result_path, False, traceback.format_exc(limit=8))
            return 0
        except UsageError as error:
            _write_error(result_path, True, str(error))
            return 0
        except Exception:  # the user's factory or step failed: its traceback is the answer
            _write_error(result_path, False, traceback.format_exc(limit=8))
            return 0
        write_names(result_path, names, "none")
        return 0

    backend = parse_target(request["target"]).backend
    return guarded(trace_and_write, result_path, backend, "tracing the step")


def _write_error(result_path: Path, usage: bool, message: str) -> None:
    (result_path.parent / _ERROR_FILE).write_text(json.dumps({"usage": usage,
                                                              "message": message}))


if __name__ == "__main__":
    sys.exit(main())
