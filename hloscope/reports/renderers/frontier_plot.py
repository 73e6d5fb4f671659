"""The frontier of `sweep --search frontier` as a picture (from its JSON, `frontier.json`).

Left: tokens/s per device against the batch, one line per policy family — the best fitting
row of that family at each batch, among the rows the search compiled or chose (the others
were only predicted and are not in the result) — with each batch's winner starred. Right:
each row's device bytes against the batch, predicted (hollow) and compiled (filled), and the
capacity line. A family is what the varied names keep: nothing (all recomputed), some on
device, some offloaded, or both. matplotlib draws it; nothing here computes a figure.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from hloscope.reports.renderers.plot import outside_legend, render_svg, write_plot

FAMILIES = {frozenset(): "all recomputed", frozenset({"device"}): "some kept on device",
            frozenset({"offload"}): "some offloaded",
            frozenset({"device", "offload"}): "kept and offloaded"}
SIZE = {"nrows": 1, "ncols": 2, "figsize": (11, 4.2)}


def family(row: dict[str, Any]) -> str:
    """The family of a row's policy: which non-remat choices its names take."""
    kept = frozenset(c for c in row["choices"].values() if c != "remat")
    return FAMILIES[kept]


def frontier_svg(data: dict[str, Any]) -> str:
    """The figure as an inline `<svg>`."""
    return render_svg(lambda axes: draw_frontier(axes, data), **SIZE)


def plot_frontier(data: dict[str, Any], path: Path) -> None:
    """The figure written to `path` (.png, .svg or .pdf)."""
    write_plot(lambda axes: draw_frontier(axes, data), path, dpi=120, **SIZE)


def draw_frontier(axes: Any, data: dict[str, Any]) -> None:
    speed, memory = axes
    _speed(speed, data["rows"])
    _memory(memory, data["rows"], data["capacity_bytes"])


def _speed(axes: Any, rows: list[dict[str, Any]]) -> None:
    fitting = [r for r in rows if r["fits"] and r["predicted_tokens_per_s"] is not None]
    for name in FAMILIES.values():
        best: dict[int, float] = {}
        for row in fitting:
            if family(row) == name:
                best[row["batch"]] = max(best.get(row["batch"], 0.0),
                                         row["predicted_tokens_per_s"])
        if best:
            batches = sorted(best)
            axes.plot(batches, [best[b] for b in batches], marker="o", label=name, gid=name)
    chosen = [r for r in fitting if r["chosen"]]
    axes.plot([r["batch"] for r in chosen], [r["predicted_tokens_per_s"] for r in chosen],
              marker="*", markersize=12, color="black", linestyle="none", label="winner",
              gid="winners")
    axes.set_xlabel("batch")
    axes.set_ylabel("predicted tokens/s per device")
    axes.set_title("Fastest fitting policy per family")
    outside_legend(axes)


def _memory(axes: Any, rows: list[dict[str, Any]], capacity: int) -> None:
    mib = 2 ** 20
    axes.plot([r["batch"] for r in rows], [r["predicted_bytes"] / mib for r in rows],
              marker="o", markerfacecolor="none", linestyle="none", color="#4c72b0",
              label="predicted", gid="predicted")
    compiled = [r for r in rows if r["compiled_bytes"] is not None]
    axes.plot([r["batch"] for r in compiled], [r["compiled_bytes"] / mib for r in compiled],
              marker="o", linestyle="none", color="#dd8452", label="compiled", gid="compiled")
    axes.axhline(capacity / mib, color="red", linestyle="--", label="capacity", gid="capacity")
    axes.set_xlabel("batch")
    axes.set_ylabel("device MiB")
    axes.set_title("Device memory: predicted and compiled")
    outside_legend(axes)
