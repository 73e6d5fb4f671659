"""The winner of a sweep — the fastest variant that fits — and why each other variant lost.

"Fastest" is the highest estimated throughput (tokens per second = the variant's tokens per step
/ its roofline step time), which equals the shortest step when every variant runs the same batch
and stays right when `--search batch` or a grid sweep gives each variant its own. The step time
that ranks is the roofline's *overlapped* bound (compute, HBM and each link running concurrently:
XLA issues collectives and host copies asynchronously, and overlapping them is what carry offload
and FSDP rely on); the serial bound stays in every row, so a variant whose lead depends on that
overlap can be seen. Variants whose FLOPs are a lower bound (a loop's trip count unknown) rank
after those counted completely. Ties (and targets without a step estimate) go to fewer FLOPs per
token, then to less memory.
A variant whose program is identical to an earlier one (same fingerprint, same batch) is
reported as that one's duplicate and not ranked; failed compiles and variants that do not fit
(on the device, or in their hosts' RAM for what they offload) are not ranked either. When no
variant's fit is known (CPU targets have no capacity), every compiled variant is ranked and the
reasons say so.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from hloscope.analyses.summary.variant import VariantFigures
from hloscope.units import format_bytes, format_flops

WINNER, SLOWER, NO_FIT, DUPLICATE, FAILED = ("winner", "slower", "does not fit", "duplicate",
                                             "failed")


@dataclass(frozen=True)
class Verdict:
    variant: str
    outcome: str
    reason: str
    rank: int | None = None
    duplicate_of: str | None = None
    host_link_line: str | None = None  # how the ranking depends on the host link (offload)

    def to_dict(self) -> dict:
        return asdict(self)


def rank_variants(rows: list[VariantFigures]) -> tuple[str | None, dict[str, Verdict]]:
    """(the winner's name or None, a verdict per variant)."""
    verdicts: dict[str, Verdict] = {}
    first_of: dict[tuple[str, int], str] = {}
    candidates: list[VariantFigures] = []
    fit_known = any(row.fits is not None for row in rows)
    for row in rows:
        verdict = _unranked(row, first_of, fit_known)
        if verdict is None:
            candidates.append(row)
        else:
            verdicts[row.variant] = verdict
    ordered = sorted(candidates, key=_speed_key)
    for position, row in enumerate(ordered, start=1):
        verdicts[row.variant] = _ranked(row, position, ordered[0], fit_known)
    winner = ordered[0].variant if ordered else None
    if winner is not None:
        verdicts[winner] = _serial_note(verdicts[winner], ordered)
    for row in ordered:
        line = host_link_line(row, ordered)
        if line is not None:
            verdicts[row.variant] = replace(verdicts[row.variant], host_link_line=line)
    return winner, {row.variant: verdicts[row.variant] for row in rows}


def host_link_line(row: VariantFigures, ordered: list[VariantFigures]) -> str | None:
    """For a row that moves data to the host: the host link it needs to beat the fastest row
    that moves none, and how far ahead or behind it is at the calibrated link."""
    timed = row.step_time
    if timed is None or not timed.moves_host:
        return None
    rivals = [other for other in ordered if other.step_time is not None
              and not other.step_time.moves_host]
    if not rivals:
        return None
    rival = min(rivals, key=lambda other: other.step_seconds or 0.0)
    rival_seconds = (rival.step_seconds or 0.0) * row.tokens / max(rival.tokens, 1)
    needed = timed.host_link_needed(rival_seconds)
    gap = timed.seconds / rival_seconds - 1
    kind = timed.calibration.get("host_link", {}).get("kind", "")
    default = (f"at the {kind} {_gbps(timed.host_link_bytes_per_second)} its step is "
               f"{abs(gap):.1%} {'longer' if gap > 0 else 'shorter'} than {rival.variant}'s")
    if needed is None:
        return (f"{row.variant}: slower than {rival.variant} whatever the host link "
                f"(without host time {timed.seconds_without_host or 0:.3f} s vs "
                f"{rival_seconds:.3f} s); {default}")
    slowest = timed.host_curve[0][0] if timed.host_curve else needed
    floor = "any host link down to " if needed <= slowest else "the host link is at least "
    return (f"{row.variant} beats {rival.variant} while {floor}{_gbps(needed)} per device "
            f"each way; {default}")


def _gbps(rate: float) -> str:
    return f"{rate / 1e9:.3g} GB/s"


def _serial_note(verdict: Verdict, ordered: list[VariantFigures]) -> Verdict:
    """The winner's verdict, saying so when the serial bound (nothing overlapped) would rank
    another variant first."""
    if ordered[0].step_time is not None:  # the per-op model already walks the overlap
        return verdict
    complete = [row for row in ordered if row.flops_complete == ordered[0].flops_complete]
    serial = [(row.tokens / row.serial_step_seconds, row) for row in complete
              if row.serial_step_seconds]
    if not serial:
        return verdict
    best_rate, best = max(serial, key=lambda pair: pair[0])
    if best.variant == verdict.variant:
        return verdict
    return Verdict(verdict.variant, verdict.outcome,
                   f"{verdict.reason}; without overlap (serial bound) {best.variant} would be "
                   f"faster ({_rate(best_rate)})", verdict.rank, verdict.duplicate_of)


def _unranked(row: VariantFigures, first_of: dict[tuple[str, int], str],
              fit_known: bool) -> Verdict | None:
    if row.fingerprint is not None:
        key = (row.fingerprint, row.batch)
        if key in first_of:
            original = first_of[key]
            return Verdict(row.variant, DUPLICATE, f"compiles to the same program as {original}",
                           duplicate_of=original)
        first_of[key] = row.variant
    if row.status not in ("ok", "oom"):
        first_line = (row.error or "no error text").strip().splitlines()[0]
        return Verdict(row.variant, FAILED, f"compile {row.status}: {first_line}")
    if row.fits is False:
        return Verdict(row.variant, NO_FIT, _no_fit_reason(row))
    if row.fits is None and fit_known:
        return Verdict(row.variant, FAILED, "fit unknown")
    return None


def _no_fit_reason(row: VariantFigures) -> str:
    host = row.host_fit
    if row.status == "ok" and host is not None and host.fits is False:
        return f"does not fit at batch {row.batch}: {host.reason}"
    needed = "an unknown amount" if row.required_bytes is None else format_bytes(
        row.required_bytes)
    capacity = "" if row.capacity_bytes is None else f" of {format_bytes(row.capacity_bytes)}"
    return f"does not fit at batch {row.batch}: needs {needed}{capacity} ({row.fit_source})"


def _speed_key(row: VariantFigures) -> tuple[bool, float, float, float]:
    """Complete FLOP counts first (a lower bound can be arbitrarily low), then throughput."""
    speed = row.tokens_per_second
    flops = _flops_per_token(row)
    memory = row.required_bytes if row.required_bytes is not None else float("inf")
    return (not row.flops_complete, -speed if speed else float("inf"), flops, memory)


def _ranked(row: VariantFigures, position: int, best: VariantFigures,
            fit_known: bool) -> Verdict:
    if position == 1:
        fit = "fastest that fits" if fit_known else "fit unknown (no capacity)"
        if row.step_seconds is None:
            fit += "; fewest FLOPs per token (no step-time estimate)"
        elif row.step_time is not None:
            fit += f"; step {row.step_time.seconds:.3f} s, mostly {row.step_time.dominant}"
        return Verdict(row.variant, WINNER, fit + _bound_note(row), rank=1)
    return Verdict(row.variant, SLOWER, _slower_reason(row, best), rank=position)


def _slower_reason(row: VariantFigures, best: VariantFigures) -> str:
    speed, best_speed = row.tokens_per_second, best.tokens_per_second
    if not speed or not best_speed:
        return _flops_reason(row, best)
    loss = 1 - speed / best_speed
    text = (f"slower: {_rate(speed)} vs {_rate(best_speed)} for {best.variant} "
            f"(-{loss:.1%})")
    if loss <= 0 and not row.flops_complete and best.flops_complete:
        text = (f"FLOPs incomplete, ranked after complete counts: {_rate(speed)} estimated vs "
                f"{_rate(best_speed)} for {best.variant}")
    if row.hlo and best.hlo and row.hlo.recompute_flops > best.hlo.recompute_flops:
        text += "; recomputes more"
    return text + _bound_note(row)


def _flops_reason(row: VariantFigures, best: VariantFigures) -> str:
    """Without step estimates (no device facts, e.g. CPU) variants are ranked by FLOPs per
    token."""
    if row.hlo is None or best.hlo is None:
        return "no step-time estimate or FLOPs to compare"
    return (f"no step-time estimate (no device facts); more FLOPs per token: "
            f"{format_flops(_flops_per_token(row))} vs {format_flops(_flops_per_token(best))} "
            f"for {best.variant}")


def _flops_per_token(row: VariantFigures) -> float:
    """FLOPs per token: comparable across batches and sequence lengths (grid sweeps)."""
    return row.hlo.total_flops / max(row.tokens, 1) if row.hlo else float("inf")


def _bound_note(row: VariantFigures) -> str:
    notes = []
    missing = row.step_time.missing if row.step_time is not None else \
        row.step.missing if row.step is not None else ()
    if missing:
        notes.append("estimate is a lower bound (unknown " + ", ".join(missing) + ")")
    if row.host_fit is not None and row.host_fit.fits is None:
        notes.append(row.host_fit.reason)
    if row.hlo is not None and row.hlo.unknown_loops:
        notes.append(f"FLOPs are a lower bound ({row.hlo.unknown_loops} loops with unknown "
                     "trip counts)")
    return "".join(f"; {note}" for note in notes)


def _rate(tokens_per_second: float) -> str:
    return f"{tokens_per_second:,.0f} tokens/s"
