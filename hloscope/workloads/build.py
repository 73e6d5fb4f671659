"""One build: compile one model variant for one target into a folder that explains it (no jax).

The build folder's layout and manifest are `hloscope.formats.build`: the manifest says what was
built (model, variant, target, config, parameter count, cache key, versions), the verdict (ok /
oom / error / crash / timeout, with XLA's error text), compile times and the program's
fingerprint; beside it are XLA's memory/cost analysis figures, the main module's optimized HLO
(also after an OOM: libtpu dumps the program it could not fit), XLA's dump folder and the log.

An OOM is a result, not a failure of the build: the dump folder is what explains it. The compile
runs in a child process (`runner.compile_in_subprocess`). `prepare_folder` refuses to reuse a
non-empty folder unless told to (`--force`), so nothing is overwritten by accident.
"""
from __future__ import annotations

import datetime
import functools
import hashlib
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hloscope.configs.any_config import AnyConfig
from hloscope.configs.config import param_count
from hloscope.configs.flags import CompileFlags
from hloscope.configs.mesh import MeshPlan, plan_mesh
from hloscope.configs.step import StepConfig
from hloscope.configs.targets import Target, parse_target
from hloscope.errors import OutputExistsError, UsageError
from hloscope.formats.build import (
    DUMP_FOLDER,
    HLO_FILE,
    LOG_FILE,
    BuildFolder,
    manifest_files,
    write_build_files,
)
from hloscope.formats.compile_record import CompileResult
from hloscope.version import __version__
from hloscope.workloads.compiler import package_versions
from hloscope.workloads.fingerprint import file_fingerprint
from hloscope.workloads.runner import TRANSFORMER_BUILDER, CompileRequest, compile_in_subprocess

MODULE_NAME = "jit_train_step"
_WORKLOAD_SOURCES = ("configs/config.py", "workloads/transformer.py", "workloads/layers.py",
                     "workloads/blockwise.py", "workloads/splash.py",
                     "workloads/remat.py", "workloads/sharding.py", "workloads/compiler.py",
                     "workloads/compile_job.py", "configs/targets.py",
                     "workloads/topology.py", "configs/mesh.py", "configs/slices.py",
                     "configs/flags.py", "workloads/checkpoint_names.py")  # under hloscope/
_STEP_SOURCES = ("configs/step.py", "workloads/step.py", "workloads/capture.py",
                 "workloads/remat.py", "workloads/sharding.py", "workloads/compiler.py",
                 "workloads/compile_job.py", "configs/targets.py", "workloads/topology.py",
                 "configs/mesh.py", "configs/slices.py", "configs/flags.py",
                 "workloads/checkpoint_names.py")
STEP_BUILDER = "hloscope.workloads.step:build_step"  # a user's factory (configs/step.py)
_MODULE_FILE = re.compile(r"^module_(\d+)\.(?P<name>[^.]+)\..*after_optimizations\.txt$")


@dataclass(frozen=True)
class BuildSpec:
    """What to compile: a model (preset name) variant, fully configured, for a target; or a
    user's step (`config` a StepConfig, `model` its factory)."""

    model: str
    variant: str
    target: str
    config: AnyConfig
    compiler_options: dict[str, Any] = field(default_factory=dict)
    flags: CompileFlags = field(default_factory=CompileFlags)  # user and environment flags

    @functools.cached_property
    def parsed_target(self) -> Target:
        """`target` parsed, once per spec (the field stays the canonical string: manifests,
        cache keys and child processes carry it)."""
        return parse_target(self.target)

    @property
    def backend(self) -> str:
        return self.parsed_target.backend

    def mesh(self) -> MeshPlan:
        """The train step's mesh on this target; UsageError when the config does not fit it."""
        target = self.parsed_target
        return plan_mesh(self.config, target.num_slices, target.devices_per_slice)

    @property
    def is_step(self) -> bool:
        return isinstance(self.config, StepConfig)

    @property
    def builder(self) -> str:
        return STEP_BUILDER if self.is_step else TRANSFORMER_BUILDER

    def config_record(self) -> dict[str, Any]:
        """The config as manifests and keys record it (a step's without its pickled bytes)."""
        config = self.config
        return config.describe() if isinstance(config, StepConfig) else config.to_dict()

    def key_material(self) -> dict[str, Any]:
        """Everything the compiled program depends on (the cache key is its hash)."""
        sources = _STEP_SOURCES if self.is_step else _WORKLOAD_SOURCES
        return {"builder": self.builder, "config": self.config_record(),
                "target": self.parsed_target.spec,
                "compiler_options": self.compiler_options,
                "flags": self.flags.to_dict(),
                "versions": {**package_versions(self.backend), "hloscope": __version__,
                             "workload_source": workload_source_hash(sources)}}

    def cache_key(self) -> str:
        material = json.dumps(self.key_material(), sort_keys=True, default=str)
        return hashlib.sha256(material.encode()).hexdigest()[:24]


def workload_source_hash(sources: tuple[str, ...] = _WORKLOAD_SOURCES) -> str:
    """A hash of the modules that define the compiled program (a checkout's edits count)."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent.parent
    for name in sources:
        digest.update((package / name).read_bytes())
    return digest.hexdigest()[:16]


def prepare_folder(folder: Path, force: bool) -> None:
    """Creates `folder`; an existing non-empty one is removed with `force`, refused without."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        if not force:
            raise OutputExistsError(f"{folder} exists and is not empty; use --force to replace it")
        if folder.is_dir():
            shutil.rmtree(folder)
        else:
            folder.unlink()
    folder.mkdir(parents=True, exist_ok=True)


def run_build(spec: BuildSpec, folder: Path, timeout: float = 3600.0) -> BuildFolder:
    """Compiles `spec` in a child process and writes the build folder (which must be empty)."""
    folder.mkdir(parents=True, exist_ok=True)
    request = CompileRequest(spec.target, str(folder / DUMP_FOLDER), builder=spec.builder,
                             builder_kwargs=spec.config.to_dict(),
                             compiler_options=spec.compiler_options,
                             flags=spec.flags.to_dict())
    result = compile_in_subprocess(request, timeout=timeout, log_path=folder / LOG_FILE)
    return write_build(spec, result, folder)


def write_build(spec: BuildSpec, result: CompileResult, folder: Path) -> BuildFolder:
    name = (result.module_name or MODULE_NAME) if spec.is_step else MODULE_NAME
    hlo = main_module_hlo(folder / DUMP_FOLDER, name)
    if hlo is not None:
        shutil.copy2(hlo, folder / HLO_FILE)
    compiled = result.to_dict()
    return write_build_files(folder, _manifest(spec, result, hlo),
                             None if result.memory is None else compiled["memory"],
                             None if result.cost is None else compiled["cost"])


def _manifest(spec: BuildSpec, result: CompileResult, hlo: Path | None) -> dict[str, Any]:
    compiled = result.to_dict()
    compiled.pop("dump_dir", None)
    target = spec.parsed_target
    return {
        "hloscope_version": __version__,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "model": spec.model,
        "variant": spec.variant,
        "target": target.spec,
        "target_description": target.describe(),
        "devices": target.num_devices,
        "mesh": _mesh_record(spec),
        "flags": spec.flags.to_dict(),
        "config": spec.config_record(),
        "parameters": None if isinstance(spec.config, StepConfig) else param_count(spec.config),
        "cache_key": spec.cache_key(),
        "key_material": spec.key_material(),
        "status": result.status,
        "error": result.error,
        "fingerprint": None if hlo is None else file_fingerprint(hlo),
        "files": manifest_files(hlo.name if hlo else None),
        "compile": compiled,
    }


def _mesh_record(spec: BuildSpec) -> dict[str, Any] | None:
    try:
        return spec.mesh().describe()
    except UsageError:  # the compile said why (status "error"); the manifest has no mesh
        return None


def main_module_hlo(dump: Path, module_name: str = MODULE_NAME) -> Path | None:
    """The after-optimizations HLO of `module_name` in a dump folder (the largest program of that
    name when XLA compiled several), or None."""
    if not dump.is_dir():
        return None
    candidates = [p for p in dump.iterdir() if p.is_file() and (m := _MODULE_FILE.match(p.name))
                  and m.group("name") == module_name]
    return max(candidates, key=lambda p: p.stat().st_size, default=None)
