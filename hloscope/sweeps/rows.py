"""The flat JSON row of one sweep case: every column of `hloscope/sweep/v1` (no jax)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from hloscope.analyses.roofline import StepEstimate
from hloscope.analyses.summary.variant import VariantFigures, names_dicts
from hloscope.formats.build import LOG_FILE
from hloscope.sweeps.grid import Case
from hloscope.sweeps.ranking import Verdict
from hloscope.sweeps.search import Probe


@dataclass
class VariantOutcome:
    """A case's representative build (at its chosen batch) and every probe it took."""

    variant: str  # the case name (the variant's own name on a one-point grid)
    case: Case
    figures: VariantFigures
    folder: str
    cache_hit: bool
    probes: list[Probe]
    attempts: int = 1
    lost: tuple[str, ...] = ()  # why each earlier attempt was lost
    largest_fitting_batch: int | None = None
    smallest_failing_batch: int | None = None  # the smallest above the largest fitting one
    non_monotonic: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    search_end: str | None = None  # why the batch search ended (search.END_*)


def variant_row(outcome: VariantOutcome, verdict: Verdict) -> dict[str, Any]:
    """Every column of one case, flat (bytes and FLOPs as integers)."""
    figures = outcome.figures
    step = figures.step
    return {
        "variant": outcome.variant, "outcome": verdict.outcome, "rank": verdict.rank,
        "reason": verdict.reason, "duplicate_of": verdict.duplicate_of,
        "host_link_line": verdict.host_link_line,
        "policy": outcome.case.variant.name,
        "grid": {"seq_len": outcome.case.point.seq_len, "batch": outcome.case.point.batch},
        "status": figures.status, "fits": figures.fits, "fit_source": figures.fit_source,
        "predicted_fits": figures.predicted_fits, "live_peak_fits": figures.live_peak_fits,
        "batch": figures.batch, "seq_len": outcome.case.point.seq_len, "tokens": figures.tokens,
        "required_bytes": figures.required_bytes, "required_source": figures.required_source,
        "capacity_bytes": figures.capacity_bytes, "memory_fraction": _fraction(figures),
        "host_temp_bytes": figures.host_temp_bytes, **_host_columns(figures),
        "compile_seconds": figures.compile_seconds, "cache_hit": outcome.cache_hit,
        "attempts": outcome.attempts, "lost_attempts": list(outcome.lost),
        **_hlo_columns(figures),
        "step_seconds": figures.step_seconds,
        **_step_columns(step),
        **_per_op_columns(figures),
        "tokens_per_second": figures.tokens_per_second,
        "fingerprint": figures.fingerprint, "build_folder": outcome.folder,
        "log": f"{outcome.folder}/{LOG_FILE}",
        "error": figures.error, "analysis_error": figures.analysis_error,
        "gpu_remat_warning": figures.gpu_remat_warning,
        "largest_fitting_batch": outcome.largest_fitting_batch,
        "smallest_failing_batch": outcome.smallest_failing_batch,
        "non_monotonic": [list(pair) for pair in outcome.non_monotonic],
        "search_end": outcome.search_end,
        "probes": [dataclasses.asdict(probe) for probe in outcome.probes],
        "checkpoint_names": names_dicts(figures.checkpoint_names),
    }


def _hlo_columns(figures: VariantFigures) -> dict[str, Any]:
    hlo = figures.hlo
    names = ("total_flops", "forward_flops", "recompute_flops", "recompute_overhead",
             "bytes_accessed", "collective_bytes", "to_host_bytes", "from_host_bytes",
             "unknown_loops", "live_peak_bytes", "dcn_collective_bytes",
             "ici_collective_bytes", "closed_form_flops")
    values = {name: None if hlo is None else getattr(hlo, name) for name in names}
    return {**values, "xla_flops": figures.xla_flops}


def _step_columns(step: StepEstimate | None) -> dict[str, Any]:
    """The roofline's terms and both bounds; `step_seconds` (the ranked one) is the overlapped
    bound."""
    names = ("compute_seconds", "memory_seconds", "collective_seconds", "offload_seconds",
             "ici_seconds", "dcn_seconds", "serial_seconds", "overlapped_seconds", "bound",
             "dominant")
    values = {name: None if step is None else getattr(step, name) for name in names}
    return {**values, "estimate_missing": [] if step is None else list(step.missing)}


def _per_op_columns(figures: VariantFigures) -> dict[str, Any]:
    """The per-op model (analyses/steptime): what ranks where the device has a calibration."""
    timed = figures.step_time
    ranked_by = "per-op" if timed is not None else "overlapped"
    if timed is None:
        return {"step_ranked_by": ranked_by, "step_time": None, "step_dominant": None,
                "exposed_seconds": None}
    return {"step_ranked_by": ranked_by, "step_time": timed.to_dict(),
            "step_dominant": timed.dominant,
            "exposed_seconds": sum(timed.exposed_by_link.values())}


def _host_columns(figures: VariantFigures) -> dict[str, Any]:
    """The pinned-host-memory check (all None for a program that pins nothing)."""
    host = figures.host_fit
    if host is None:
        return {"host_bytes_per_device": None, "host_bytes_source": None,
                "host_bytes_per_host": None, "host_memory_bytes": None, "host_fits": None,
                "host_fit_reason": None}
    return {"host_bytes_per_device": host.bytes_per_device, "host_bytes_source": host.source,
            "host_bytes_per_host": host.bytes_per_host,
            "host_memory_bytes": host.host_memory_bytes, "host_fits": host.fits,
            "host_fit_reason": host.reason}


def _fraction(figures: VariantFigures) -> float | None:
    if figures.required_bytes is None or not figures.capacity_bytes:
        return None
    return figures.required_bytes / figures.capacity_bytes
