"""Reports of `hloscope snapshot` (the JSON CI keeps) and `hloscope check` (the verdict)."""
from __future__ import annotations

from hloscope.analyses.check import CheckResult, Snapshot
from hloscope.analyses.headline import Metric
from hloscope.reports.report import Column, Quantity, Report, Table

_VIOLATION_COLUMNS = [Column("metric", "metric"), Column("baseline", "baseline"),
                      Column("current", "current"), Column("change", "change", "percent"),
                      Column("rule", "allowed")]


def check_report(result: CheckResult, kinds: dict[str, str]) -> Report:
    rows = [{"metric": v.metric, "baseline": _quantity(v.baseline, kinds.get(v.metric)),
             "current": _quantity(v.current, kinds.get(v.metric)),
             "change": _change(v.baseline, v.current), "rule": v.rule}
            for v in result.violations]
    verdict = "passed" if result.passed else f"failed: {len(result.violations)} violation(s)"
    summary: list = [("module", result.module), ("verdict", verdict),
                     ("checked", ", ".join(f"{t.metric} {t.describe()}"
                                           for t in result.thresholds) or "nothing")]
    return Report(name="check", title=f"Check of {result.module} against the baseline",
                  summary=summary,
                  tables=[Table("violations", "Violations", _VIOLATION_COLUMNS, rows)],
                  notes=_toolchain_notes(result), data=result.to_dict())


def snapshot_report(snapshot: Snapshot, metrics: list[Metric]) -> Report:
    return Report(name="snapshot", title=f"Snapshot of {snapshot.module}",
                  summary=[(m.label, _quantity(m.value, m.kind)) for m in metrics],
                  data=snapshot.to_dict())


def _quantity(value: int | float | None, kind: str | None) -> Quantity | str:
    if value is None:
        return "n/a"
    return Quantity(value, kind or "int")  # type: ignore[arg-type]


def _change(before: int | float | None, now: int | float | None) -> float | None:
    if before is None or now is None or not before:
        return None
    return (now - before) / abs(before)


def _toolchain_notes(result: CheckResult) -> list[str]:
    if not result.toolchain_changes:
        return []
    changed = ", ".join(f"{key} {old or '?'} -> {new or '?'}"
                        for key, (old, new) in result.toolchain_changes.items())
    return [f"the toolchain differs from the baseline's ({changed}): a compiler change, not "
            "necessarily a code regression; `--update` rewrites the baseline"]
