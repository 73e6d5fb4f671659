"""XLA's dump folder: its HLO text files and how one module among them is named.

A dump folder holds one `module_NNNN.<name>.<backend>_after_optimizations.txt` per program (and
the `before_optimizations` text when asked for), each possibly gzip-compressed (`.txt.gz`, as
hloscope's trace fixture keeps them); a module is named by its module name, its file name or its
program id NNNN.

Without a name, the main module is the train step: the largest of the modules with a backward
pass (an op_name under JAX's `transpose(jvp(...))`), since a folder dumped around a training
run also holds its init program, which can be the larger file; the largest module when none has
one. Each file is scanned in chunks for that marker, so a folder of many large modules stays in
bounded memory.
"""
from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from hloscope.errors import InputError

AFTER_OPTIMIZATIONS = "after_optimizations.txt"
BEFORE_OPTIMIZATIONS = "before_optimizations.txt"
_DUMP_NAME = re.compile(r"module_(\d+)\.([^.]+)\..*(?:after|before)_optimizations\.txt(?:\.gz)?$")
GZIP_SUFFIX = ".gz"


@dataclass(frozen=True, slots=True)
class DumpFile:
    """One HLO text file in an XLA dump folder."""

    path: Path
    program_id: int
    module_name: str
    size: int


def dump_files(folder: Path) -> list[DumpFile]:
    """The HLO text files of a dump folder: after-optimization ones, else before-optimization."""
    for suffix in (AFTER_OPTIMIZATIONS, BEFORE_OPTIMIZATIONS):
        paths = sorted([*folder.glob(f"*{suffix}"), *folder.glob(f"*{suffix}{GZIP_SUFFIX}")])
        found = [_dump_file(p) for p in paths if p.is_file()]
        if found:
            return found
    return []


def _dump_file(path: Path) -> DumpFile:
    match = _DUMP_NAME.search(path.name)
    program_id, name = (int(match.group(1)), match.group(2)) if match else (-1, path.stem)
    return DumpFile(path, program_id, name, path.stat().st_size)


BACKWARD_MARKER = b"transpose(jvp("
_CHUNK = 8 << 20


def has_backward_pass(path: Path) -> bool:
    """Whether the HLO text at `path` has an op_name of JAX's backward pass (each file version is
    scanned once: the module and XLA's memory files beside it are chosen the same way)."""
    stat = path.stat()
    return _scan_for_backward_pass(path, stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=4096)
def _scan_for_backward_pass(path: Path, size: int, mtime_ns: int) -> bool:
    tail = b""
    opened = gzip.open(path, "rb") if path.suffix == GZIP_SUFFIX else path.open("rb")  # noqa: SIM115
    with opened as stream:
        while chunk := stream.read(_CHUNK):
            if BACKWARD_MARKER in tail + chunk:
                return True
            tail = chunk[-len(BACKWARD_MARKER):]
    return False


def main_dump_file(files: list[DumpFile]) -> tuple[DumpFile, str]:
    """The main module of a folder (module docstring) and why it was chosen."""
    steps = [f for f in files if len(files) > 1 and has_backward_pass(f.path)]
    if steps:
        chosen = max(steps, key=lambda f: f.size)
        if chosen.size == max(f.size for f in files):
            return chosen, "the largest module"
        return chosen, (f"the largest of the {len(steps)} module(s) with a backward pass (a train "
                        "step); larger modules without one were passed over")
    return max(files, key=lambda f: f.size), "the largest module"


def choose_dump_file(files: list[DumpFile], module: str | None, folder: Path) -> DumpFile:
    """The main file (`main_dump_file`), or the one `module` names; InputError when none has
    that name."""
    if module is None:
        return main_dump_file(files)[0]
    for dump in files:
        if module in (dump.module_name, dump.path.name, str(dump.program_id),
                      f"{dump.program_id:04d}"):
            return dump
    names = ", ".join(sorted({f.module_name for f in files}))
    raise InputError(f"{folder}: no module named {module!r}; the folder holds: {names}")
