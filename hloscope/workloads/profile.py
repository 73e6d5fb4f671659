"""One profiling run: a model variant's train step measured under `jax.profiler.trace` (no jax).

A profile folder holds

    profile.json   what ran (model, variant, config, steps), the outcome, host-measured step
                   seconds and losses, the backend, versions, and where the files are
    trace/         what jax.profiler.trace wrote: plugins/profile/<run>/<host>.xplane.pb and
                   <host>.trace.json.gz
    dump/          XLA's dump folder of the train step (after-optimizations HLO text, buffer
                   assignment, live range, memory-usage report, ...)
    profile.log    the child process's output

The run happens in a child process (`profile_job`) on the local device, as compiles do
(`runner`): the parent never imports jax, and a crash is reported with the log's tail.
`hloscope trace FOLDER` reads the trace and joins it to the dump.
"""
from __future__ import annotations

import datetime
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hloscope.errors import HloscopeError
from hloscope.spec.config import TransformerConfig, param_count
from hloscope.spec.targets import parse_target
from hloscope.version import __version__
from hloscope.workloads.build import prepare_folder
from hloscope.workloads.compiler import package_versions
from hloscope.workloads.runner import child_environment, run_child, tail_of_log

PROFILE_SCHEMA = "hloscope/profile-manifest/v1"
MANIFEST, TRACE, DUMP, LOG = "profile.json", "trace", "dump", "profile.log"


class ProfileFailed(HloscopeError):
    """The profiling child process failed (the message carries its log's tail)."""


@dataclass(frozen=True)
class ProfileSpec:
    model: str
    variant: str
    config: TransformerConfig
    steps: int = 2
    platform: str = "cpu"  # JAX_PLATFORMS of the child: the local device to run on


def run_profile(spec: ProfileSpec, folder: Path, force: bool = False,
                timeout: float = 1800.0) -> dict[str, Any]:
    """Profiles `spec` into `folder` (refused when not empty, unless `force`); the manifest."""
    prepare_folder(folder, force)
    request = {"config": spec.config.to_dict(), "steps": spec.steps,
               "trace_dir": str(folder / TRACE), "dump_dir": str(folder / DUMP)}
    with tempfile.TemporaryDirectory(prefix="hloscope-profile-") as scratch:
        request_path, result_path = Path(scratch) / "request.json", Path(scratch) / "result.json"
        request_path.write_text(json.dumps(request))
        command = [sys.executable, "-m", "hloscope.workloads.profile_job", str(request_path),
                   str(result_path)]
        environment = {**child_environment(parse_target("cpu")), "JAX_PLATFORMS": spec.platform}
        code = run_child(command, environment, folder / LOG, timeout)
        if code != 0 or not result_path.exists():
            raise ProfileFailed(f"the profiling process failed ({_outcome(code)}); the end of "
                                f"{folder / LOG}:\n{tail_of_log(folder / LOG)}")
        result = json.loads(result_path.read_text())
    manifest = _manifest(spec, result)
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _outcome(code: int | None) -> str:
    return "timed out" if code is None else f"exit status {code}"


def _manifest(spec: ProfileSpec, result: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": PROFILE_SCHEMA,
        "hloscope_version": __version__,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "model": spec.model,
        "variant": spec.variant,
        "config": spec.config.to_dict(),
        "parameters": param_count(spec.config),
        "steps": spec.steps,
        "versions": package_versions(result.get("backend", "cpu")),
        "files": {"trace": TRACE, "dump": DUMP, "log": LOG},
        **result,
    }
