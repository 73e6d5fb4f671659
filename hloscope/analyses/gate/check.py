"""A CI gate (`hloscope check`): a program's snapshot against a baseline's, under thresholds.

Thresholds are relative increases (`--max-peak-increase 2%`: fails above +2.00% exactly),
absolute increases (`--max-remat-increase 0`) and absolute limits (`--max-peak 16GiB`, or the
device's memory budget with `--device`). Comparisons are exact: a percentage is taken as the
decimal it was written as, never as a rounded float, so +29 on 100 passes `29%`. A figure that
is unknown on either side (memory of an unscheduled module) is not checked, and the result says
so with the reason. A toolchain that differs from the baseline's is reported beside the
violations: a compiler upgrade is not a code regression.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from hloscope.analyses.gate.headline import step_metric
from hloscope.analyses.gate.snapshot import snapshot_program
from hloscope.dataframes import Rendered
from hloscope.devices import Device, memory_budget
from hloscope.errors import UsageError
from hloscope.formats.snapshot import TOOLCHAIN_KEYS, Snapshot
from hloscope.loader.program import Program
from hloscope.units import format_bytes, parse_bytes, parse_threshold

MEMORY_NEEDED = "memory_bytes"
STEP_TIME = "step_ms"


@dataclass(frozen=True, slots=True)
class Threshold:
    """A limit on one figure: `relative` (0.02 = +2%), `absolute` increase, or `limit`."""

    metric: str
    relative: Fraction | None = None  # exact, from the text: "29%" is 29/100
    absolute: float | None = None
    limit: float | None = None
    why: str = ""  # what a limit is, e.g. "v5e memory budget"

    def describe(self) -> str:
        if self.relative is not None:
            return f"increase <= {float(self.relative * 100):g}%"
        if self.absolute is not None:
            return f"increase <= {self._amount(self.absolute)}"
        return f"<= {self._amount(self.limit or 0)}" + (f" ({self.why})" if self.why else "")

    def _amount(self, value: float) -> str:
        """Bytes in binary units, with the exact count when the units round it."""
        if not self.metric.endswith("_bytes") or value != int(value):
            return f"{value:g}"
        shown = format_bytes(int(value))
        return shown if parse_bytes(shown) == value else f"{shown} ({int(value):,} B)"

    def to_dict(self) -> dict[str, Any]:
        relative = None if self.relative is None else float(self.relative)
        return {"metric": self.metric, "relative": relative, "absolute": self.absolute,
                "limit": self.limit, "why": self.why}


@dataclass(frozen=True, slots=True)
class Violation:
    metric: str
    baseline: int | float | None
    current: int | float | None
    rule: str

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "baseline": self.baseline, "current": self.current,
                "rule": self.rule}


@dataclass(frozen=True, slots=True)
class Unchecked:
    """A threshold that could not be applied: its figure is unknown on one side."""

    metric: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"metric": self.metric, "reason": self.reason}


@dataclass(slots=True)
class CheckResult(Rendered):
    module: str
    current: Snapshot
    baseline: Snapshot
    thresholds: list[Threshold]
    violations: list[Violation]
    unchecked: list[Unchecked] = field(default_factory=list)
    toolchain_changes: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    figures: dict[str, tuple[int | float | None, int | float | None]] = field(
        default_factory=dict)  # every checked figure: (baseline, current)
    kinds: dict[str, str] = field(default_factory=dict)  # a figure's report kind (bytes, ...)

    @property
    def passed(self) -> bool:
        return not self.violations

    def to_dict(self) -> dict[str, Any]:
        return {"module": self.module, "baseline_module": self.baseline.module,
                "passed": self.passed, "violations": [v.to_dict() for v in self.violations],
                "unchecked": [u.to_dict() for u in self.unchecked],
                "thresholds": [t.to_dict() for t in self.thresholds],
                "figures": {key: {"baseline": before, "current": now}
                            for key, (before, now) in self.figures.items()},
                "toolchain_changes": {key: {"baseline": old, "current": new}
                                      for key, (old, new) in self.toolchain_changes.items()},
                "current": self.current.to_dict(), "baseline": self.baseline.to_dict()}


def check_program(program: Program, label: str, baseline: Snapshot,
                  thresholds: list[Threshold], device: Device | None = None,
                  allow_backend_change: bool = False) -> CheckResult:
    """`program`'s snapshot against `baseline`, with the kinds of its headline figures.

    A gate that checks nothing is refused (UsageError): no threshold and no device would pass
    every program. So is a baseline compiled for another backend (a CPU program against a TPU
    baseline compares unlike figures) unless `allow_backend_change`."""
    if not thresholds and device is None:
        raise UsageError("check needs a threshold (--max-peak-increase, "
                         "--max-allocation-increase, --max-flops-increase, "
                         "--max-remat-increase, --max-peak or --device): without one it would "
                         "check nothing and pass")
    taken = snapshot_program(program, label)
    _check_backend(taken.snapshot, baseline, allow_backend_change)
    result = check(taken.snapshot, baseline, thresholds, device)
    result.kinds.update({m.key: m.kind for m in taken.metrics(device)})
    return result


def _check_backend(current: Snapshot, baseline: Snapshot, allowed: bool) -> None:
    old, new = baseline.toolchain.get("backend"), current.toolchain.get("backend")
    if allowed or old is None or new is None or old == new:
        return
    raise UsageError(f"the baseline was compiled for {old.upper()} and this program for "
                     f"{new.upper()}: their figures are not comparable; pass "
                     "--allow-backend-change to check it anyway (or take a new baseline)")


def thresholds_for(peak: str | None = None, allocation: str | None = None,
                   flops: str | None = None, remat: int | None = None,
                   limit: str | None = None) -> list[Threshold]:
    """The thresholds of `check`'s options: increases of the live peak, XLA's allocation and the
    FLOPs ("2%" or an amount), of the remat instructions (a count), and a peak limit (bytes)."""
    thresholds = [_increase(metric, text) for metric, text in
                  (("peak_bytes", peak), ("allocation_bytes", allocation),
                   ("total_flops", flops)) if text is not None]
    if remat is not None:
        thresholds.append(Threshold("remat_instructions", absolute=remat))
    if limit is not None:
        thresholds.append(Threshold("peak_bytes", limit=parse_bytes(limit)))
    return thresholds


def step_time_threshold(text: str) -> Threshold:
    """A relative limit on the estimated step time; UsageError unless `text` is a percentage."""
    parsed = parse_threshold(text)
    if parsed.fraction is None:
        raise UsageError(f"{text!r}: give a percentage such as 5%")
    return Threshold(STEP_TIME, relative=parsed.fraction)


def _increase(metric: str, text: str) -> Threshold:
    parsed = parse_threshold(text)
    if parsed.fraction is not None:
        return Threshold(metric, relative=parsed.fraction)
    return Threshold(metric, absolute=parsed.bytes)


def check(current: Snapshot, baseline: Snapshot, thresholds: list[Threshold],
          device: Device | None = None) -> CheckResult:
    """`current` against `baseline`; `device` adds its memory budget and the step time."""
    now, before = figures(current, device), figures(baseline, device)
    if device is not None and (budget := memory_budget(device)) is not None:
        thresholds = [*thresholds, Threshold(MEMORY_NEEDED, limit=budget,
                                             why=f"{device.name} memory budget")]
    violations, unchecked = [], []
    for threshold in thresholds:
        outcome = _apply(threshold, now.get(threshold.metric), before.get(threshold.metric))
        if isinstance(outcome, str):
            unchecked.append(Unchecked(threshold.metric, _unknown(outcome, current, baseline)))
        elif outcome is not None:
            violations.append(outcome)
    checked = dict.fromkeys([t.metric for t in thresholds] + ([STEP_TIME] if device else []))
    return CheckResult(current.module, current, baseline, thresholds, violations, unchecked,
                       toolchain_changes(current, baseline),
                       {key: (before.get(key), now.get(key)) for key in checked})


def figures(snapshot: Snapshot, device: Device | None) -> dict[str, int | float | None]:
    """A snapshot's figures plus what `check` derives: the memory a program needs (XLA's
    allocation when known, else the live peak) and, with a device, the roofline step time."""
    metrics: dict[str, int | float | None] = dict(snapshot.metrics)
    allocation = metrics.get("allocation_bytes")
    metrics[MEMORY_NEEDED] = allocation if allocation is not None else metrics.get("peak_bytes")
    if device is not None:
        metrics[STEP_TIME] = step_metric(device, metrics.get("total_flops"),
                                         metrics.get("bytes_accessed"),
                                         metrics.get("collective_bytes")).value
    return metrics


def toolchain_changes(current: Snapshot,
                      baseline: Snapshot) -> dict[str, tuple[str | None, str | None]]:
    """The toolchain entries known on both sides that differ (unknown is not a change)."""
    changes: dict[str, tuple[str | None, str | None]] = {}
    for key in TOOLCHAIN_KEYS:
        old, new = baseline.toolchain.get(key), current.toolchain.get(key)
        if old is not None and new is not None and old != new:
            changes[key] = (old, new)
    return changes


def _apply(threshold: Threshold, now: int | float | None,
           before: int | float | None) -> Violation | str | None:
    """The violation, None when within, or which side ("current"/"baseline") lacks the figure."""
    rule = threshold.describe()
    if now is None:
        return "current"
    if threshold.limit is not None:
        return Violation(threshold.metric, before, now, rule) \
            if Fraction(now) > Fraction(threshold.limit) else None
    if before is None:
        return "baseline"
    increase = Fraction(now) - Fraction(before)
    if threshold.absolute is not None:
        allowed = Fraction(threshold.absolute)
    else:
        allowed = (threshold.relative or Fraction(0)) * abs(Fraction(before))
    return Violation(threshold.metric, before, now, rule) if increase > allowed else None


def _unknown(side: str, current: Snapshot, baseline: Snapshot) -> str:
    snapshot = current if side == "current" else baseline
    reason = "; ".join(snapshot.notes) or "the figure is unknown"
    return f"n/a in the {side} program: {reason}"
