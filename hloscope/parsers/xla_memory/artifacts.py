"""Finding XLA's memory files that belong to one module of a dump folder.

XLA names every file of a module `module_NNNN.<name>.<stage>`; the after-optimizations HLO is
`...<backend prefix>after_optimizations.txt` (CPU `cpu_`, GPU `sm_9.0a_gpu_`, TPU
`cl_<compile id>.`), and its memory files share that base:

    <base>after_optimizations-buffer-assignment.txt           allocations
    <base>after_optimizations-buffer-assignment-values.txt    used values (XLA 0.10 era)
    <base>after_optimizations-live-range.txt                  schedule, intervals, live peak
    <base>after_optimizations-memory-usage-report.txt         per memory space
    <base>after_optimizations.hlo.pb                          HloProto (--xla_dump_hlo_as_proto)

Given a dump folder, the module is chosen as the loader chooses it (the largest
after-optimizations file, or `module` by name, file name or program id). Given another file of
the module (before optimizations, an OOM's intermediate module), its program's after-
optimizations base is used. Files may be gzip-compressed (`.gz`). Any file may be missing.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hloscope.errors import InputError
from hloscope.model.xla_memory import (
    BufferAssignment,
    HloProtoData,
    LiveRangeDump,
    MemoryUsageReport,
)
from hloscope.parsers.dump_folder import (
    AFTER_OPTIMIZATIONS,
    DumpFile,
    choose_dump_file,
    dump_files,
)
from hloscope.parsers.xla_memory.buffer_assignment import read_buffer_assignment
from hloscope.parsers.xla_memory.hlo_proto import read_hlo_proto
from hloscope.parsers.xla_memory.live_range import read_live_range
from hloscope.parsers.xla_memory.usage_report import label_tables, read_usage_report

SUFFIXES = {
    "buffer_assignment": "-buffer-assignment.txt",
    "buffer_values": "-buffer-assignment-values.txt",
    "live_range": "-live-range.txt",
    "usage_report": "-memory-usage-report.txt",
    "hlo_proto": ".hlo.pb",
}


@dataclass(frozen=True)
class XlaMemoryArtifacts:
    """The memory files of one module (None where absent); `read_*` parse them on each call."""

    hlo_path: Path | None = None
    program_id: int | None = None
    module_name: str | None = None
    buffer_assignment: Path | None = None
    buffer_values: Path | None = None
    live_range: Path | None = None
    usage_report: Path | None = None
    hlo_proto: Path | None = None

    @property
    def found(self) -> bool:
        return any(getattr(self, kind) is not None for kind in SUFFIXES)

    def read_buffer_assignment(self) -> BufferAssignment | None:
        if self.buffer_assignment is None:
            return None
        return read_buffer_assignment(self.buffer_assignment, self.buffer_values)

    def read_live_range(self) -> LiveRangeDump | None:
        return None if self.live_range is None else read_live_range(self.live_range)

    def read_usage_report(self) -> MemoryUsageReport | None:
        """The report, its tables labelled with allocation indices when the assignment is here."""
        if self.usage_report is None:
            return None
        report = read_usage_report(self.usage_report)
        assignment = self.read_buffer_assignment()
        return report if assignment is None else label_tables(report, assignment)

    def read_hlo_proto(self) -> HloProtoData | None:
        return None if self.hlo_proto is None else read_hlo_proto(self.hlo_proto)

    def to_dict(self) -> dict[str, Any]:
        return {key: (str(value) if isinstance(value, Path) else value)
                for key, value in self.__dict__.items()}


def find_memory_artifacts(source: str | Path, module: str | None = None) -> XlaMemoryArtifacts:
    """The memory files of the module `source` names (a dump folder or one of its files).

    Standard input and HLO text have none (an empty bundle). InputError when `source` does not
    exist or a folder has no module of that name."""
    if str(source) == "-" or (isinstance(source, str) and "\n" in source):
        return XlaMemoryArtifacts()
    path = Path(source)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    hlo = _choose(path, module) if path.is_dir() else _main_file_of(path)
    if hlo is None:
        return XlaMemoryArtifacts(hlo_path=None if path.is_dir() else path)
    return _bundle(hlo)


def _choose(folder: Path, module: str | None) -> DumpFile | None:
    files = [f for f in dump_files(folder) if f.path.name.endswith(AFTER_OPTIMIZATIONS)]
    return choose_dump_file(files, module, folder) if files else None


def _main_file_of(path: Path) -> DumpFile | None:
    """The after-optimizations dump file of the program `path` belongs to, if it is a dump."""
    name = path.name.removesuffix(".gz")
    if name.endswith(AFTER_OPTIMIZATIONS):
        found = [f for f in dump_files(path.parent) if f.path.name == name]
        return found[0] if found else DumpFile(path, -1, path.stem, path.stat().st_size)
    prefix = _module_prefix(name)
    if prefix is None:
        return None
    same = [f for f in dump_files(path.parent)
            if f.path.name.startswith(prefix) and f.path.name.endswith(AFTER_OPTIMIZATIONS)]
    return max(same, key=lambda f: f.size) if same else None


def _module_prefix(name: str) -> str | None:
    """`module_0000.jit_f.` of `module_0000.jit_f.before_optimizations.txt`."""
    parts = name.split(".")
    if len(parts) < 3 or not parts[0].startswith("module_"):
        return None
    return f"{parts[0]}.{parts[1]}."


def _bundle(hlo: DumpFile) -> XlaMemoryArtifacts:
    name = hlo.path.name.removesuffix(".gz")
    base = hlo.path.with_name(name[: -len(".txt")])
    found = {kind: _existing(Path(f"{base}{suffix}")) for kind, suffix in SUFFIXES.items()}
    program_id = hlo.program_id if hlo.program_id >= 0 else None
    return XlaMemoryArtifacts(hlo_path=hlo.path, program_id=program_id,
                              module_name=hlo.module_name, **found)


def _existing(path: Path) -> Path | None:
    for candidate in (path, path.with_name(path.name + ".gz")):
        if candidate.is_file():
            return candidate
    return None
