"""Reports of `hloscope snapshot` (the JSON CI keeps) and `hloscope check` (the verdict).

The check report leads with the violations (the first table, what CSV writes), then every checked
figure on both sides; notes say what could not be checked and why, and whether the toolchain
differs from the baseline's.
"""
from __future__ import annotations

from hloscope.analyses.gate.check import MEMORY_NEEDED, STEP_TIME, CheckResult
from hloscope.analyses.gate.headline import Metric
from hloscope.formats.snapshot import Snapshot
from hloscope.reports.report import Column, Quantity, Report, Table

_FIGURE_COLUMNS = [Column("metric", "metric"), Column("baseline", "baseline"),
                   Column("current", "current"), Column("change", "change", "percent")]
_VIOLATION_COLUMNS = [*_FIGURE_COLUMNS, Column("rule", "allowed")]
_DERIVED_KINDS = {MEMORY_NEEDED: "bytes", STEP_TIME: "int"}


def check_report(result: CheckResult, kinds: dict[str, str]) -> Report:
    kinds = {**_DERIVED_KINDS, **kinds}
    violations = [{**_figure_row(v.metric, v.baseline, v.current, kinds), "rule": v.rule}
                  for v in result.violations]
    figures = [_figure_row(key, before, now, kinds)
               for key, (before, now) in result.figures.items()]
    verdict = "passed" if result.passed else f"failed: {len(result.violations)} violation(s)"
    summary: list = [("module", result.module), ("verdict", verdict),
                     ("checked", ", ".join(f"{t.metric} {t.describe()}"
                                           for t in result.thresholds) or "nothing")]
    if result.toolchain_changes:
        summary.append(("toolchain", "differs from the baseline's: " + _changes(result)))
    return Report(name="check", title=f"Check of {result.module} against the baseline",
                  summary=summary,
                  tables=[Table("violations", "Violations", _VIOLATION_COLUMNS, violations),
                          Table("figures", "Checked figures", _FIGURE_COLUMNS, figures)],
                  notes=_notes(result), data=result.to_dict())


def snapshot_report(snapshot: Snapshot, metrics: list[Metric]) -> Report:
    kept = [m for m in metrics if m.key in snapshot.metrics]
    summary: list = [(m.label, _quantity(snapshot.metrics[m.key], m.kind)) for m in kept]
    summary += [(f"toolchain {key}", value or "unknown")
                for key, value in sorted(snapshot.toolchain.items())]
    return Report(name="snapshot", title=f"Snapshot of {snapshot.module}", summary=summary,
                  notes=list(snapshot.notes), data=snapshot.to_dict())


def _figure_row(metric: str, before: int | float | None, now: int | float | None,
                kinds: dict[str, str]) -> dict:
    kind = kinds.get(metric, "int")
    return {"metric": metric, "baseline": _quantity(before, kind),
            "current": _quantity(now, kind), "change": _change(before, now)}


def _quantity(value: int | float | None, kind: str) -> Quantity | str:
    if value is None:
        return "n/a"
    return Quantity(value, kind)  # type: ignore[arg-type]


def _change(before: int | float | None, now: int | float | None) -> float | None:
    if before is None or now is None or not before:
        return None
    return (now - before) / abs(before)


def _notes(result: CheckResult) -> list[str]:
    notes = [f"{u.metric} not checked: {u.reason}" for u in result.unchecked]
    if result.baseline.module and result.baseline.module != result.module:
        notes.append(f"the baseline is of module {result.baseline.module!r}, "
                     f"this program is {result.module!r}")
    if result.toolchain_changes:
        notes.append(f"the toolchain differs from the baseline's ({_changes(result)}): a "
                     "compiler change, not necessarily a code regression; `--update` rewrites "
                     "the baseline")
    return notes


def _changes(result: CheckResult) -> str:
    return ", ".join(f"{key} {old} -> {new}"
                     for key, (old, new) in result.toolchain_changes.items())
