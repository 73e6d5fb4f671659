"""A content-addressed cache of build folders, safe on a path many workers share (no jax).

The key is a hash of everything the program depends on (`BuildSpec.key_material`): the full
model config (remat policy and layout included), the target, the compiler options, the versions
of python, jax, jaxlib and the backend plugin (libtpu or the CUDA wheels), hloscope's version
and a hash of the workload's own source files (so edits in a checkout are new keys).

An entry is a build folder at `<root>/builds/<key>/`. A worker compiles into its own staging
folder (`<root>/staging/<key>-<attempt>`), seals it (`seal.seal_folder`: every file's size and
SHA-256, written last) and publishes it with one `rename` — atomic on a local file system and on
NFS — so nobody sees half an entry. When two workers publish the same key the first rename wins
and the second keeps the winner's entry. A lookup trusts an entry only when its seal matches
every file: a partial or corrupt entry is moved aside to `<root>/corrupt/` and compiled again.
Crashes and timeouts are not cached (they may not recur); ok, oom and error results are.

The root is `--cache-dir`, else `$HLOSCOPE_CACHE_DIR`, else `$XDG_CACHE_HOME/hloscope`, else
`~/.cache/hloscope`.
"""
from __future__ import annotations

import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from hloscope.errors import InputError
from hloscope.formats.build import BuildFolder, read_build
from hloscope.workloads.build import BuildSpec, run_build
from hloscope.workloads.seal import seal_folder, seal_problem

CACHED_STATUSES = frozenset({"ok", "oom", "error"})
_SETTLE_SECONDS = 0.05
_SETTLE_TRIES = 40
_PUBLISH_TRIES = 3


def default_cache_dir() -> Path:
    explicit = os.environ.get("HLOSCOPE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hloscope"


def new_attempt_id() -> str:
    return uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class BuildCache:
    root: Path

    def entry(self, key: str) -> Path:
        return self.root / "builds" / key

    def staging(self, key: str, attempt: str) -> Path:
        return self.root / "staging" / f"{key}-{attempt}"

    def lookup(self, spec: BuildSpec) -> BuildFolder | None:
        """The entry for `spec` when it is complete and unaltered; a damaged one is moved aside."""
        key = spec.cache_key()
        folder = self.entry(key)
        if not folder.exists():
            return None
        problem = seal_problem(folder, key)
        if problem is None:
            try:
                return read_build(folder)
            except InputError as error:
                problem = str(error)
        self.quarantine(key, problem)
        return None

    def build(self, spec: BuildSpec, timeout: float,
              attempt: str | None = None) -> tuple[BuildFolder, bool]:
        """(the build, True when it came from the cache)."""
        found = self.lookup(spec)
        if found is not None:
            return found, True
        key = spec.cache_key()
        staging = self.staging(key, attempt or new_attempt_id())
        if staging.exists():
            shutil.rmtree(staging)
        built = run_build(spec, staging, timeout)
        if built.manifest["status"] not in CACHED_STATUSES:
            return built, False
        seal_folder(staging, key)
        return self.publish(key, staging), False

    def publish(self, key: str, staging: Path) -> BuildFolder:
        """Moves a sealed staging folder into place; keeps another writer's intact entry."""
        folder = self.entry(key)
        folder.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(_PUBLISH_TRIES):
            try:
                staging.rename(folder)
            except OSError:  # the key exists: published by another writer, or damaged
                problem = seal_problem(folder, key)
                if problem is None:
                    shutil.rmtree(staging, ignore_errors=True)
                    return self._settled(key)
                self.quarantine(key, problem)
                continue
            return self._settled(key)
        raise InputError(f"{folder}: could not publish the cache entry (it keeps changing)")

    def _settled(self, key: str) -> BuildFolder:
        """The intact entry of `key`, waiting out another writer's quarantine check."""
        folder = self.entry(key)
        for _ in range(_SETTLE_TRIES):
            if seal_problem(folder, key) is None:
                try:
                    return read_build(folder)
                except InputError:
                    pass
            time.sleep(_SETTLE_SECONDS)
        raise InputError(f"{folder}: the cache entry vanished after it was published")

    def quarantine(self, key: str, problem: str) -> None:
        """Moves a damaged entry out of the way (kept for inspection with the reason). Another
        writer may have published an intact entry since `problem` was found: that one goes back."""
        aside = self.root / "corrupt" / f"{key}-{new_attempt_id()}"
        aside.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.entry(key).rename(aside)
        except OSError:  # another worker moved or replaced it first
            return
        if seal_problem(aside, key) is None:
            try:
                aside.rename(self.entry(key))
            except OSError:  # yet another intact entry is in place already
                shutil.rmtree(aside, ignore_errors=True)
            return
        (aside / "REASON.txt").write_text(problem + "\n")


def copy_build(build: BuildFolder, destination: Path) -> BuildFolder:
    """A copy of a build folder (hard links where the file system allows: no extra space)."""
    if destination.exists():
        shutil.rmtree(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copytree(build.folder, destination, copy_function=os.link)
    except OSError:
        shutil.rmtree(destination, ignore_errors=True)
        shutil.copytree(build.folder, destination)
    return read_build(destination)


def build_into(spec: BuildSpec, folder: Path, cache_root: Path | None,
               timeout: float) -> tuple[BuildFolder, bool]:
    """Builds `spec` into the (prepared) `folder`: compiled there without a cache, else taken
    from (or compiled into) the cache and copied; True when it came from the cache."""
    if cache_root is None:
        return run_build(spec, folder, timeout), False
    build, cached = BuildCache(cache_root).build(spec, timeout)
    return copy_build(build, folder), cached
