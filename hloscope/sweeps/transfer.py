"""Build folders carried between machines as bytes, for workers that do not share the driver's
file system (no jax).

A Ray worker on another node compiles into its own copy of the cache path; when it cannot see
the driver's probe file (`Probe`) it returns the build folder packed as a tar archive, and the
driver unpacks it into its own cache (where the seal is checked again) or sweep folder.
"""
from __future__ import annotations

import io
import shutil
import tarfile
import uuid
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Probe:
    """A file the driver creates in a folder the workers write to; a worker that sees it shares
    the driver's file system."""

    path: Path

    @classmethod
    def create(cls, folder: Path) -> Probe:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f".hloscope-probe-{uuid.uuid4().hex[:12]}"
        path.write_text("written by the driver of an hloscope sweep\n")
        return cls(path)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def pack_folder(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as archive:
        archive.add(folder, arcname=".")
    return buffer.getvalue()


def unpack_folder(data: bytes, destination: Path) -> Path:
    """Unpacks an archive made by `pack_folder` into `destination` (replaced if it exists)."""
    if destination.exists():
        shutil.rmtree(destination)
    destination.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        archive.extractall(destination, filter="data")
    return destination
