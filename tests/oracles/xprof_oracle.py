"""xprof's own figures for a capture: its converter's hlo_stats, op_profile and memory_profile.

The reference for `hloscope trace` on captures it did not make (`pip install xprof`, see
pyproject's `xprof` extra). xprof writes cache files beside the XSpace it converts, so it runs on
a copy in a temporary folder. Used by the wild-trace tests (skipped when xprof is absent) and by
`benchmarks/trace_vs_xprof.py`.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PS_PER_US = 1_000_000


@dataclass(frozen=True, slots=True)
class XprofOp:
    """One row of xprof's hlo_stats."""

    program_id: int
    op: str
    category: str
    occurrences: int
    self_us: float


@dataclass(frozen=True, slots=True)
class XprofFigures:
    ops: list[XprofOp]
    programs: dict[str, float]  # op_profile's "name(id)" -> self time in µs
    memory_peaks: dict[str, int]  # memory_profile: allocator -> peakBytesInUse


def xprof_figures(xplane: Path) -> XprofFigures:
    """hlo_stats, op_profile and memory_profile of `xplane` as xprof's converter gives them."""
    from xprof.convert import raw_to_tool_data

    with tempfile.TemporaryDirectory(prefix="xprof-oracle-") as scratch:
        copy = Path(scratch) / xplane.name
        shutil.copyfile(xplane, copy)
        raw_to_tool_data.xspace_to_tool_names([str(copy)])
        tools = {tool: json.loads(raw_to_tool_data.xspace_to_tool_data([str(copy)], tool, {})[0])
                 for tool in ("hlo_stats", "op_profile", "memory_profile")}
    return XprofFigures(_hlo_stats(tools["hlo_stats"]), _programs(tools["op_profile"]),
                        _memory_peaks(tools["memory_profile"]))


def _hlo_stats(table: dict[str, Any]) -> list[XprofOp]:
    columns = [column["id"] for column in table["cols"]]
    rows = [dict(zip(columns, [cell.get("v") for cell in row["c"]], strict=True))
            for row in table["rows"]]
    return [XprofOp(int(r["program_id"]), r["hlo_op_name"], r["category"],
                    int(r["occurrences"]), float(r["total_self_time"])) for r in rows]


def _programs(profile: dict[str, Any]) -> dict[str, float]:
    return {node["name"]: node["metrics"]["rawTime"] / PS_PER_US
            for node in profile["byProgramExcludeIdle"].get("children", [])}


def _memory_peaks(profile: dict[str, Any]) -> dict[str, int]:
    return {allocator: int(data["profileSummary"]["peakStats"]["peakBytesInUse"])
            for allocator, data in profile.get("memoryProfilePerAllocator", {}).items()}
