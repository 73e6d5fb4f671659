"""A `hloscope build` folder: what was compiled, XLA's dump of it, and the verdict.

    manifest.json          hloscope/build-manifest/v1: model, variant, target, config, parameter
                           count, cache key and its material (versions, compiler options), the
                           verdict (status, error), the program's fingerprint, the file names and
                           the compile record (`compile_record.CompileResult`)
    memory_analysis.json   XLA's memory_analysis() figures (null when the compile failed)
    cost_analysis.json     XLA's cost_analysis() figures (null on GPU and after failures)
    optimized_hlo.txt      the main module's after-optimizations HLO
    dump/                  XLA's dump folder, as XLA wrote it
    compile.log            the compile process's output

`read_build` is strict (a folder the user names as a build); `find_build` is lenient (the build an
HLO file may belong to: beside it, or one folder up for dump/module_*.txt).
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hloscope.configs.any_config import AnyConfig
from hloscope.configs.config import TransformerConfig
from hloscope.configs.step import StepConfig, is_step_config
from hloscope.configs.targets import Target, parse_target
from hloscope.errors import InputError
from hloscope.formats.compile_record import DUMP_FOLDER, LOG_FILE, CompileResult
from hloscope.formats.json_text import read_json, write_json

BUILD_MANIFEST_SCHEMA = "hloscope/build-manifest/v1"
MANIFEST_FILE = "manifest.json"
MEMORY_FILE = "memory_analysis.json"
COST_FILE = "cost_analysis.json"
HLO_FILE = "optimized_hlo.txt"


@dataclass(frozen=True)
class BuildFolder:
    """A build folder and what its manifest says."""

    folder: Path
    manifest: dict[str, Any]

    @property
    def dump(self) -> Path:
        return self.folder / DUMP_FOLDER

    @property
    def log_path(self) -> Path:
        return self.folder / LOG_FILE

    @property
    def hlo_path(self) -> Path | None:
        path = self.folder / HLO_FILE
        return path if path.exists() else None

    @property
    def result(self) -> CompileResult:
        return CompileResult.from_dict({**self.manifest["compile"], "dump_dir": str(self.dump)})

    @property
    def config(self) -> AnyConfig:
        """The built-in model's config, or a user step's (`--step`)."""
        data = self.manifest["config"]
        if is_step_config(data):
            return StepConfig.from_dict(data)
        return TransformerConfig.from_dict(data)

    @property
    def model_config(self) -> TransformerConfig | None:
        """The built-in model's config (None for a user step: no closed forms apply)."""
        config = self.config
        return config if isinstance(config, TransformerConfig) else None

    @property
    def target(self) -> str:
        return self.manifest["target"]

    @functools.cached_property
    def parsed_target(self) -> Target:
        """The manifest's target parsed, once per folder."""
        return parse_target(self.target)

    @property
    def variant(self) -> str | None:
        return self.manifest.get("variant")

    @property
    def error(self) -> str | None:
        return self.manifest.get("error")

    @property
    def dump_module(self) -> Path | None:
        """The main module's after-optimizations file in dump/ (the one optimized_hlo.txt
        copies), when the compile wrote one."""
        name = (self.manifest.get("files") or {}).get("dump_module")
        return self.dump / name if name else None

    def log_text(self) -> str:
        """The compile log ("" when there is none)."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def is_build_folder(folder: Path) -> bool:
    return (folder / MANIFEST_FILE).is_file()


def read_build(folder: Path) -> BuildFolder:
    """The build in `folder`; InputError (exit 3) when it has no readable manifest."""
    try:
        manifest = json.loads((folder / MANIFEST_FILE).read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise InputError(f"{folder}: not a build folder ({error})") from None
    if manifest.get("schema") != BUILD_MANIFEST_SCHEMA:
        raise InputError(f"{folder / MANIFEST_FILE}: not a {BUILD_MANIFEST_SCHEMA} manifest")
    return BuildFolder(folder, manifest)


def find_build(hlo_file: Path) -> BuildFolder | None:
    """The build `hlo_file` belongs to, if any: its manifest beside the file (optimized_hlo.txt)
    or one folder up (dump/module_*.txt); None when absent, unreadable or of another schema."""
    folder = hlo_file.parent
    for candidate in (folder, folder.parent):
        manifest = read_json(candidate / MANIFEST_FILE)
        if isinstance(manifest, dict) and manifest.get("schema") == BUILD_MANIFEST_SCHEMA:
            return BuildFolder(candidate, manifest)
    return None


def manifest_files(dump_module: str | None) -> dict[str, str | None]:
    """The manifest's "files" entry: where each part of the build folder is."""
    return {"dump": DUMP_FOLDER, "optimized_hlo": HLO_FILE if dump_module else None,
            "memory_analysis": MEMORY_FILE, "cost_analysis": COST_FILE, "log": LOG_FILE,
            "dump_module": dump_module}


def write_build_files(folder: Path, manifest: dict[str, Any], memory: Any,
                      cost: Any) -> BuildFolder:
    """Writes the analyses' JSON, then the manifest (`schema` first) that makes the folder a
    build."""
    write_json(folder / MEMORY_FILE, memory)
    write_json(folder / COST_FILE, cost)
    manifest = {"schema": BUILD_MANIFEST_SCHEMA, **manifest}
    write_json(folder / MANIFEST_FILE, manifest)
    return BuildFolder(folder, manifest)
