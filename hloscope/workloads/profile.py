"""One profiling run: a model variant's train step measured under `jax.profiler.trace` (no jax).

The profile folder's layout and manifest are `hloscope.formats.profile`: profile.json (what
ran, the outcome, host-measured step seconds and losses, the backend, versions), trace/ (what
jax.profiler.trace wrote), dump/ (XLA's dump folder of the train step) and profile.log.

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

from hloscope.configs.config import TransformerConfig, param_count
from hloscope.configs.targets import parse_target
from hloscope.errors import HloscopeError
from hloscope.formats.profile import (
    DUMP_FOLDER,
    LOG_FILE,
    PROFILE_SCHEMA,
    TRACE_FOLDER,
    profile_files,
    write_profile_manifest,
)
from hloscope.version import __version__
from hloscope.workloads.build import prepare_folder
from hloscope.workloads.compiler import package_versions
from hloscope.workloads.missing import raise_if_missing
from hloscope.workloads.runner import child_environment, handshake_files, run_child, tail_of_log


class ProfileFailed(HloscopeError):
    """The profiling child process failed (the message carries its log's tail)."""


JAX_PLATFORM_NAMES = {"gpu": "cuda"}
"""JAX_PLATFORMS for `--platform`: jax 0.11 reads `gpu` as CUDA *and* ROCm and fails where
either plugin is missing ("Backend 'rocm' is not in the list of known backends", seen on an H100
machine); the gpu extra is CUDA's."""


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
               "trace_dir": str(folder / TRACE_FOLDER),
               "dump_dir": str(folder / DUMP_FOLDER), "platform": spec.platform}
    with tempfile.TemporaryDirectory(prefix="hloscope-profile-") as scratch:
        request_path, result_path = handshake_files(Path(scratch))
        request_path.write_text(json.dumps(request))
        command = [sys.executable, "-m", "hloscope.workloads.profile_job", str(request_path),
                   str(result_path)]
        environment = {**child_environment(parse_target("cpu")),
                       "JAX_PLATFORMS": JAX_PLATFORM_NAMES.get(spec.platform, spec.platform)}
        code = run_child(command, environment, folder / LOG_FILE, timeout)
        raise_if_missing(code, result_path)
        if code != 0 or not result_path.exists():
            raise ProfileFailed(f"the profiling process failed ({_outcome(code)}); the end of "
                                f"{folder / LOG_FILE}:\n{tail_of_log(folder / LOG_FILE)}")
        result = json.loads(result_path.read_text())
    manifest = _manifest(spec, result)
    write_profile_manifest(folder, manifest)
    return {"schema": PROFILE_SCHEMA, **manifest}


def _outcome(code: int | None) -> str:
    return "timed out" if code is None else f"exit status {code}"


def _manifest(spec: ProfileSpec, result: dict[str, Any]) -> dict[str, Any]:
    return {
        "hloscope_version": __version__,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "model": spec.model,
        "variant": spec.variant,
        "config": spec.config.to_dict(),
        "parameters": param_count(spec.config),
        "steps": spec.steps,
        "versions": package_versions(result.get("backend", "cpu")),
        "files": profile_files(),
        **result,
    }
