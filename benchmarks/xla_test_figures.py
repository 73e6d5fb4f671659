"""XLA's own test modules, counted by hloscope and by XLA: instructions, FLOPs, bytes accessed.

The modules are those `xla_parser_tests.py` extracts from XLA's test sources (never committed:
pass the paths and the commit). For every module XLA's test calls valid that hloscope loads and
the installed jaxlib's parser reads, it compares:

- the instruction count, every computation's (hloscope's module against jaxlib's
  `HloModule.computations()`);
- FLOPs, transcendentals and bytes accessed under XLA's conventions
  (`CostOptions.like_xla()`) against XLA's HloCostAnalysis with the CPU backend's shape sizes
  (`hlo_module_cost_analysis`, as tests/oracles/cost_oracle.py calls it), within 1% (XLA sums in
  float32) or 1 unit.

XLA runs in a worker process, restarted when a module aborts it (its cost analysis CHECK-fails
on some unverified modules); such modules are counted, not compared.

    python benchmarks/xla_test_figures.py PATH/hlo_parser_test.cc [PATH/hlo_verifier_test.cc]
        --xla-commit SHA
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from xla_parser_tests import Case, extract  # noqa: E402

import hloscope  # noqa: E402
from hloscope.analyses.cost import CostAnalysis, CostOptions  # noqa: E402
from hloscope.errors import HloscopeError  # noqa: E402

Figures = tuple[int, float, float, float]  # instructions, flops, transcendentals, bytes accessed
FIELDS = ("instructions", "FLOPs", "transcendentals", "bytes accessed")


@dataclass(frozen=True)
class Comparison:
    case: Case
    ours: Figures | None
    xla: Figures | None
    note: str  # why a side is missing

    @property
    def differing(self) -> list[str]:
        if self.ours is None or self.xla is None:
            return []
        return [field for field, mine, theirs in zip(FIELDS, self.ours, self.xla, strict=True)
                if not _close(field, mine, theirs)]


def _close(field: str, ours: float, theirs: float) -> bool:
    if field == "instructions":
        return ours == theirs
    return abs(ours - theirs) <= max(0.01 * abs(theirs), 1.0)


def hloscope_figures(text: str) -> Figures:
    module = hloscope.load(text)
    total = CostAnalysis(module, CostOptions.like_xla()).total
    count = sum(len(c.instructions) for c in module.computations.values())
    return count, total.flops, total.transcendentals, total.bytes_accessed


def xla_figures(text: str) -> Figures | str:
    """In the worker: jaxlib's parse and XLA's cost analysis, or why they refused."""
    import jax
    from jax._src.lib import xla_client
    from jaxlib import _hlo

    try:
        module = _hlo.hlo_module_from_text(text)
    except Exception as error:  # noqa: BLE001  (any refusal)
        return "jaxlib refuses: " + str(error).splitlines()[0][:80]
    count = sum(len(c.instructions()) for c in module.computations())
    try:
        cost = xla_client._xla.hlo_module_cost_analysis(jax.devices("cpu")[0].client, module)
    except Exception as error:  # noqa: BLE001
        return "XLA's cost analysis refuses: " + str(error).splitlines()[0][:80]
    return (count, cost.get("flops", 0.0), cost.get("transcendentals", 0.0),
            cost.get("bytes accessed", 0.0))


class XlaWorker:
    """One worker process for XLA, started again after a module kills it."""

    def __init__(self) -> None:
        self.pool = self._start()

    @staticmethod
    def _start() -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=1)

    def figures(self, text: str) -> Figures | str:
        try:
            return self.pool.submit(xla_figures, text).result(timeout=120)
        except BrokenProcessPool:
            self.pool = self._start()
            return "XLA aborted on it"


def compare(case: Case, worker: XlaWorker) -> Comparison:
    text = case.text + ("\n" if "\n" not in case.text else "")
    try:
        ours: Figures | None = hloscope_figures(text)
    except HloscopeError as error:
        return Comparison(case, None, None, f"hloscope refuses: {str(error).splitlines()[0]}")
    theirs = worker.figures(text)
    if isinstance(theirs, str):
        return Comparison(case, ours, None, theirs)
    return Comparison(case, ours, theirs, "")


def report(comparisons: list[Comparison], commit: str, files: list[str]) -> str:
    compared = [c for c in comparisons if c.xla is not None]
    skipped = Counter(c.note.split(":")[0] for c in comparisons if c.xla is None)
    per_field = Counter(field for c in compared for field in c.differing)
    lines = [f"XLA commit {commit}: {', '.join(files)}",
             f"valid modules: {len(comparisons)}; compared: {len(compared)}; "
             f"all four figures equal: {sum(not c.differing for c in compared)}",
             "not compared: " + (", ".join(f"{why} {n}" for why, n in sorted(skipped.items()))
                                 or "none"),
             "differences: " + ", ".join(f"{field} {per_field[field]}" for field in FIELDS)]
    for comparison in compared:
        if comparison.differing:
            assert comparison.ours is not None and comparison.xla is not None
            pairs = ", ".join(f"{field} {_show(m)} vs XLA {_show(t)}" for field, m, t in
                              zip(FIELDS, comparison.ours, comparison.xla, strict=True)
                              if field in comparison.differing)
            lines.append(f"  {comparison.case.name}: {pairs}")
    return "\n".join(lines)


def _show(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("test_files", nargs="+", type=Path)
    parser.add_argument("--xla-commit", required=True)
    args = parser.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    cases = [case for path in args.test_files for case in extract(path)[0] if case.valid]
    worker = XlaWorker()
    comparisons = [compare(case, worker) for case in cases]
    print(report(comparisons, args.xla_commit, [p.name for p in args.test_files]))


if __name__ == "__main__":
    main()
