"""A `hloscope build` folder read whole, for the figures a sweep ranks it by.

`load_build` reads everything `analyses.summary.variant.variant_figures` looks at, so that the
analysis opens no file: the manifest (`formats.build`), the optimized HLO (or why it could not be
read: a parse error becomes a reason, not an exception, the build still gets its row), the
default-space total of XLA's memory-usage report of the main module, and the compile log.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hloscope.errors import HloscopeError
from hloscope.formats.build import BuildFolder, read_build
from hloscope.loader.hlo_input import load_input
from hloscope.model.module import HloModule


@dataclass(frozen=True)
class LoadedBuild:
    """A build folder and what was read from it."""

    build: BuildFolder
    module: HloModule | None  # the optimized HLO; None when absent or unreadable
    load_error: str | None  # why the optimized HLO could not be read (first line of the error)
    reported_device_bytes: int | None  # `reported_device_total`
    log_text: str  # the compile log ("" when there is none)


def load_build(build: BuildFolder | Path) -> LoadedBuild:
    """The build (a folder is read strictly, `formats.build.read_build`) with its HLO, the
    memory-usage report's total and its log."""
    if not isinstance(build, BuildFolder):
        build = read_build(Path(build))
    module, error = _optimized_module(build)
    return LoadedBuild(build, module, error, reported_device_total(build), build.log_text())


def _optimized_module(build: BuildFolder) -> tuple[HloModule | None, str | None]:
    """The optimized HLO, or None and the reason when hloscope cannot read it (None and None
    when the build has none)."""
    if build.hlo_path is None:
        return None, None
    try:
        return load_input(build.hlo_path), None
    except HloscopeError as error:
        return None, str(error).splitlines()[0]


def reported_device_total(build: BuildFolder) -> int | None:
    """`Total bytes` of the default memory space in the main module's memory-usage report:
    the figure libtpu's OOM message compares with the usable HBM (measured: equal after every
    OOM), and on GPU and CPU the allocation."""
    hlo = build.dump_module
    if hlo is None:
        return None
    from hloscope.parsers.xla_memory.artifacts import find_memory_artifacts

    report = find_memory_artifacts(hlo).read_usage_report()
    default = None if report is None else report.space(0)
    return None if default is None else default.total_bytes
