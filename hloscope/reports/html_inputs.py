"""What `hloscope report` reads, and the page it makes of it.

Inputs are loaded modules, HLO files, dump folders, `hloscope build` folders, or a
`hloscope sweep -o DIR` folder (its sweep.json gives the verdict; each variant's build folder
gives a module). One input gives one section; several (or a sweep) add a first section with
the side-by-side comparison, the timelines on one chart and the "fastest that fits" verdict.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hloscope.analyses.summary.overview import ModuleOverview, Verdict, fastest_that_fits, overview
from hloscope.errors import InputError
from hloscope.model.module import HloModule
from hloscope.parsers.load import load_input
from hloscope.reports.overview import (
    buffers_report,
    comparison_report,
    flops_report,
    summary_report,
    sweep_verdict_report,
)
from hloscope.reports.remat import remat_report
from hloscope.reports.renderers.html_figures import flops_svg, overlay_svg
from hloscope.reports.renderers.html_page import Figure, Page, Section
from hloscope.reports.renderers.plot import timeline_svg

SWEEP_FILE = "sweep.json"
DEFAULT_TOP = 15


@dataclass
class Inputs:
    """Loaded modules with their labels, and the sweep.json of a sweep folder, if one."""

    modules: list[tuple[str, HloModule]] = field(default_factory=list)
    sweep: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


def read_inputs(sources: list[Any], module: str | None = None) -> Inputs:
    inputs = Inputs()
    for source in sources:
        if isinstance(source, HloModule):
            inputs.modules.append((source.name, source))
        elif _is_sweep(source):
            _read_sweep(Path(source), inputs)
        else:
            inputs.modules.append((_label(source), load_input(source, module)))
    if not inputs.modules:
        raise InputError("no module to report on: " + "; ".join(inputs.notes or ["no input"]))
    return inputs


def _is_sweep(source: Any) -> bool:
    if isinstance(source, str) and "\n" in source:
        return False
    return (Path(source) / SWEEP_FILE).is_file()


def _label(source: Any) -> str:
    if isinstance(source, str) and "\n" in source:
        return "<text>"
    return Path(source).name or str(source)


def _read_sweep(folder: Path, inputs: Inputs) -> None:
    try:
        inputs.sweep = json.loads((folder / SWEEP_FILE).read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise InputError(f"{folder / SWEEP_FILE}: cannot read: {error}") from None
    for row in inputs.sweep.get("variants", []):
        build = _build_folder(folder, row)
        if build is None:
            inputs.notes.append(f"{row.get('variant')}: no compiled program ({row.get('status')})")
            continue
        inputs.modules.append((str(row["variant"]), load_input(build)))


def _build_folder(folder: Path, row: dict[str, Any]) -> Path | None:
    name = re.sub(r"[:+]", "-", str(row.get("variant", "")))
    for candidate in (Path(str(row.get("build_folder") or "")), folder / "builds" / name):
        if candidate.name and (candidate / "dump").is_dir():
            return candidate
    return None


def page_for(sources: list[Any], title: str | None = None, module: str | None = None,
             capacity: int | None = None, top: int = DEFAULT_TOP) -> Page:
    inputs = read_inputs(sources, module)
    overviews = [overview(loaded, label) for label, loaded in _unique(inputs.modules)]
    sections = [_input_section(n, item, top) for n, item in enumerate(overviews, 1)]
    if len(overviews) > 1 or inputs.sweep is not None:
        if inputs.sweep is not None:
            capacity = capacity or inputs.sweep.get("capacity_bytes")
            verdict = _sweep_verdict(inputs.sweep)
        else:
            verdict = fastest_that_fits(overviews, capacity)
        sections.insert(0, _comparison_section(overviews, verdict, capacity, inputs.sweep))
    return Page(title or _title(overviews, inputs.sweep), sections, inputs.notes)


def _sweep_verdict(sweep: dict[str, Any]) -> Verdict:
    """The sweep's own verdict (libtpu's fit, the roofline step time), not a FLOPs proxy."""
    fits = {str(row["variant"]): row.get("fits") for row in sweep.get("variants", [])}
    reason = "the sweep's verdict: the fastest (estimated step time) of the variants that fit"
    return Verdict(sweep.get("winner"), reason, fits)


def _unique(modules: list[tuple[str, HloModule]]) -> list[tuple[str, HloModule]]:
    """Labels made distinct (`name`, `name (2)`, ...)."""
    seen: dict[str, int] = {}
    unique = []
    for label, loaded in modules:
        seen[label] = seen.get(label, 0) + 1
        unique.append((label if seen[label] == 1 else f"{label} ({seen[label]})", loaded))
    return unique


def _title(overviews: list[ModuleOverview], sweep: dict[str, Any] | None) -> str:
    if sweep is not None:
        return f"hloscope report: sweep of {sweep.get('model')} on {sweep.get('target')}"
    return "hloscope report: " + ", ".join(item.label for item in overviews)


def _comparison_section(overviews: list[ModuleOverview], verdict: Verdict,
                        capacity: int | None, sweep: dict[str, Any] | None) -> Section:
    blocks: list = [sweep_verdict_report(sweep)] if sweep is not None else []
    blocks.append(comparison_report(overviews, verdict, capacity))
    if any(item.memory for item in overviews):
        blocks.append(Figure("overlay", "Live device bytes of every input over its schedule; "
                             "triangles mark each peak", overlay_svg(overviews)))
    return Section("comparison", "Comparison", blocks)


def _input_section(number: int, item: ModuleOverview, top: int) -> Section:
    blocks: list = [summary_report(item)]
    if item.memory is not None:
        blocks.append(Figure(
            "timeline", "Memory timeline: live device bytes at each top-level instruction, "
            "phases shaded, the peak marked", timeline_svg(item.memory),
            {"peak-bytes": str(item.memory.peak_bytes), "input": item.label}))
    blocks.append(buffers_report(item, top))
    blocks += [flops_report(item), Figure("flops", "FLOPs by layer and by phase",
                                          flops_svg(item.flops), {"input": item.label})]
    blocks.append(remat_report(item.remat))
    return Section(f"input-{number}", item.label, blocks)
