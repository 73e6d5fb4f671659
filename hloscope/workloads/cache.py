"""A content-addressed cache of build folders, so the same program is never compiled twice (no jax).

The key is a hash of everything the program depends on (`BuildSpec.key_material`): the full
model config (remat policy and layout included), the target, the compiler options, the versions
of python, jax, jaxlib and the backend plugin (libtpu or the CUDA wheels), hloscope's version
and a hash of the workload's own source files (so edits in a checkout are new keys). An entry is
a complete build folder at `<root>/builds/<key>/`; it is written in a staging folder and moved
into place whole, so concurrent sweeps never see half an entry. Crashes and timeouts are not
cached (they may not recur); ok, oom and error results are.

The root is `$HLOSCOPE_CACHE_DIR`, else `$XDG_CACHE_HOME/hloscope`, else `~/.cache/hloscope`.
"""
from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from hloscope.errors import InputError
from hloscope.workloads.build import MANIFEST, Build, BuildSpec, load_build, run_build

CACHED_STATUSES = frozenset({"ok", "oom", "error"})


def default_cache_dir() -> Path:
    explicit = os.environ.get("HLOSCOPE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hloscope"


@dataclass(frozen=True)
class BuildCache:
    root: Path

    def entry(self, key: str) -> Path:
        return self.root / "builds" / key

    def lookup(self, spec: BuildSpec) -> Build | None:
        folder = self.entry(spec.cache_key())
        if not (folder / MANIFEST).exists():
            return None
        try:
            return load_build(folder)
        except InputError:
            return None

    def build(self, spec: BuildSpec, timeout: float) -> tuple[Build, bool]:
        """(the build, True when it came from the cache)."""
        found = self.lookup(spec)
        if found is not None:
            return found, True
        staging = self.root / "staging" / f"{spec.cache_key()}-{uuid.uuid4().hex[:8]}"
        built = run_build(spec, staging, timeout)
        if built.manifest["status"] not in CACHED_STATUSES:
            return built, False
        return self._publish(spec, staging), False

    def _publish(self, spec: BuildSpec, staging: Path) -> Build:
        folder = self.entry(spec.cache_key())
        folder.parent.mkdir(parents=True, exist_ok=True)
        try:
            staging.rename(folder)
        except OSError:  # another process published the same key first: keep theirs
            shutil.rmtree(staging, ignore_errors=True)
        return load_build(folder)


def copy_build(build: Build, destination: Path) -> Build:
    """A copy of a build folder (hard links where the file system allows: no extra space)."""
    if destination.exists():
        shutil.rmtree(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copytree(build.folder, destination, copy_function=os.link)
    except OSError:
        shutil.rmtree(destination, ignore_errors=True)
        shutil.copytree(build.folder, destination)
    return load_build(destination)
