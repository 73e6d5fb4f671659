"""A `hloscope build` folder read whole, for the figures a sweep ranks it by.

`load_build` reads everything `analyses.summary.variant.variant_figures` looks at, so that the
analysis opens no file: the manifest (`formats.build`), the optimized HLO (or why it could not be
read: a parse error becomes a reason, not an exception, the build still gets its row), the
default-space and pinned-host totals of XLA's memory-usage report of the main module, and the
compile log.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hloscope.devices import HOST_MEMORY_SPACE
from hloscope.errors import HloscopeError
from hloscope.formats.build import BuildFolder, read_build
from hloscope.formats.checkpoint_names import CheckpointName, read_names
from hloscope.loader.hlo_input import load_input
from hloscope.model.module import HloModule
from hloscope.parsers.libtpu_log import LibtpuRemat, parse_libtpu_log


@dataclass(frozen=True)
class LoadedBuild:
    """A build folder and what was read from it."""

    build: BuildFolder
    module: HloModule | None  # the optimized HLO; None when absent or unreadable
    load_error: str | None  # why the optimized HLO could not be read (first line of the error)
    reported_device_bytes: int | None  # `reported_device_total`
    log_text: str  # the compile log ("" when there is none)
    reported_host_bytes: int | None = None  # pinned host memory total (`reported_totals`)
    checkpoint_names: list[CheckpointName] | None = None  # None: the build recorded none
    libtpu_remat: LibtpuRemat | None = None  # libtpu's memory-pressure remat, from the log


def load_build(build: BuildFolder | Path) -> LoadedBuild:
    """The build (a folder is read strictly, `formats.build.read_build`) with its HLO, the
    memory-usage report's total and its log."""
    if not isinstance(build, BuildFolder):
        build = read_build(Path(build))
    module, error = _optimized_module(build)
    device_total, host_total = reported_totals(build)
    log = build.log_text()
    return LoadedBuild(build, module, error, device_total, log, host_total,
                       read_names(build.folder), parse_libtpu_log(log).rematerialization)


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
    return reported_totals(build)[0]


def reported_totals(build: BuildFolder) -> tuple[int | None, int | None]:
    """`Total bytes` of the default memory space and of pinned host memory (S(5)) in the main
    module's memory-usage report (None where the report or the space is absent)."""
    hlo = build.dump_module
    if hlo is None:
        return None, None
    from hloscope.parsers.xla_memory.artifacts import find_memory_artifacts

    report = find_memory_artifacts(hlo).read_usage_report()
    if report is None:
        return None, None
    device, host = report.space(0), report.space(HOST_MEMORY_SPACE)
    return (None if device is None else device.total_bytes,
            None if host is None else host.total_bytes)
