"""`sweep --measure K`: run the K fastest predicted variants that fit on the target's own devices
and rank them by the step times measured there.

Each candidate runs `steps` train steps through the `profile` machinery (a child process under
`jax.profiler.trace`, its trace joined to its program), and its measured step is the median of
the traced steps. The measured candidates are ranked by measured throughput; predicted and
measured steps stand side by side with the error. Only targets whose devices are here can be
measured: the local CPU, or one GPU or TPU device of the platform present (`run` on a lent
machine); a target of several devices, or a user's own step, is refused with the reason.
"""
from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from hloscope.configs.step import StepConfig
from hloscope.errors import UsageError
from hloscope.sweeps.core import SweepRequest, SweepResult
from hloscope.sweeps.ranking import WINNER, Verdict
from hloscope.sweeps.rows import VariantOutcome

MEASURED_FOLDER = "measured"


@dataclass(frozen=True)
class MeasuredStep:
    """One candidate run on the device: its predicted and measured step."""

    variant: str
    predicted_seconds: float | None  # what ranked it (None: no step estimate on this target)
    predicted_by: str | None  # per-op or overlapped (the roofline)
    measured_seconds: float
    step_seconds: tuple[float, ...]  # every traced step
    tokens: int
    folder: str

    @property
    def error(self) -> float | None:
        """predicted / measured - 1 (negative: the prediction is faster than the device)."""
        if self.predicted_seconds is None:
            return None
        return self.predicted_seconds / self.measured_seconds - 1

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.measured_seconds

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "step_seconds": list(self.step_seconds), "error": self.error,
                "tokens_per_second": self.tokens_per_second}


def measurable_platform(request: SweepRequest) -> str:
    """The local platform the target's programs run on; UsageError when they cannot run here."""
    target = request.parsed_target
    if isinstance(request.base, StepConfig):
        raise UsageError("--measure runs the built-in model's variants; a --step sweep cannot "
                         "be measured yet (run `hloscope profile` on your step instead)")
    if target.num_devices != 1:
        raise UsageError(f"--measure runs each variant on one local device; {target.spec} has "
                         f"{target.num_devices} (measure a one-device target such as cpu or "
                         f"gpu:{target.device_name}:1x1x1)")
    if target.backend != "cpu":
        _require_local(target.backend)
    return target.backend


def _require_local(platform: str) -> None:
    from hloscope.workloads.devices_here import local_device_count

    if local_device_count(platform) < 1:
        raise UsageError(f"--measure needs a {platform} device on this machine and there is "
                         "none; the predicted ranking stands without it")


def measure_folder(request: SweepRequest) -> Path:
    """Where the measured runs go: the sweep's output folder, else a new folder in the cache."""
    import datetime

    if request.out_dir is not None:
        return Path(request.out_dir)
    if request.cache_root is None:
        raise UsageError("--measure needs an output folder (-o DIR) or the build cache")
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    return Path(request.cache_root) / MEASURED_FOLDER / stamp


def candidates(result: SweepResult, count: int) -> list[VariantOutcome]:
    """The `count` fastest predicted ranked variants (those that fit, or every compiled one
    where fit is unknown)."""
    ranked = [o for o in result.outcomes if result.verdicts[o.variant].rank is not None]
    ranked.sort(key=lambda outcome: result.verdicts[outcome.variant].rank or 0)
    return ranked[:count]


def measure(result: SweepResult, count: int, steps: int, folder: Path, platform: str,
            force: bool = False, timeout: float = 1800.0) -> SweepResult:
    """`result` with the `count` fastest predicted candidates measured on `platform`
    (`measurable_platform`'s answer) and re-ranked by their measured step (`result.measured`);
    each run's trace goes into `folder/measured/VARIANT`."""
    from hloscope.workloads.profile import ProfileSpec, run_profile

    chosen = candidates(result, count)
    working = max((o.figures.required_bytes or 0 for o in chosen), default=0)
    predict = cpu_predictor(working) if platform == "cpu" else None
    base = result.request.base
    assert not isinstance(base, StepConfig), "measurable_platform refuses a --step sweep"
    measured = []
    for outcome in chosen:
        config = outcome.case.config(base, outcome.figures.batch)
        run_folder = folder / MEASURED_FOLDER / outcome.case.file_name
        spec = ProfileSpec(result.request.model, outcome.case.variant.name, config, steps,
                           platform)
        run_profile(spec, run_folder, force, timeout)
        measured.append(_measured(outcome, run_folder, platform, config.compute_dtype,
                                  predict))
    ranked = with_measured_ranking(result, measured)
    if result.request.out_dir is not None:
        from hloscope.formats.sweep import write_sweep

        write_sweep(result.request.out_dir, ranked.to_dict())
    return ranked


Predict = Callable[[VariantOutcome, str], float | None]
"""(a candidate, its compute dtype) -> its predicted step."""
CPU_PREDICTION = "per-op (rates measured on this CPU)"


def cpu_predictor(working_set_bytes: int) -> Predict:
    """The per-op model with this CPU's rates, measured once (`workloads.cpu_probe`) over the
    candidates' largest working set (their device memory, XLA's allocation)."""
    from hloscope.analyses.steptime import step_time
    from hloscope.analyses.steptime.calibration import measured_cpu
    from hloscope.formats.build import HLO_FILE
    from hloscope.loader.hlo_input import load_input
    from hloscope.workloads.cpu_probe import probe_cpu

    rates = probe_cpu(working_set_bytes)
    device, calibration = measured_cpu(rates.bf16_flops, rates.f32_flops,
                                       rates.bytes_per_second, rates.op_seconds,
                                       "measured by hloscope.workloads.cpu_probe")

    def predict(outcome: VariantOutcome, compute_dtype: str) -> float | None:
        module = load_input(Path(outcome.folder) / HLO_FILE)
        timed = step_time(module, device, compute_dtype, calibration=calibration)
        return None if timed is None else timed.seconds

    return predict


def _measured(outcome: VariantOutcome, run_folder: Path, platform: str, compute_dtype: str,
              predict: Predict | None) -> MeasuredStep:
    from hloscope.analyses.trace.run import analyse_traced
    from hloscope.loader.trace import load_traced

    traced = analyse_traced(load_traced(run_folder), "cpu" if platform == "cpu" else None)
    seconds = tuple(us / 1e6 for us in traced.step_times_us)
    if not seconds:
        raise UsageError(f"{outcome.variant}: its trace in {run_folder} holds no step")
    figures = outcome.figures
    predicted, by = figures.step_seconds, figures.step_model
    if predict is not None:
        predicted, by = predict(outcome, compute_dtype), CPU_PREDICTION
    return MeasuredStep(outcome.variant, predicted, by, statistics.median(seconds), seconds,
                        figures.tokens, str(run_folder))


def with_measured_ranking(result: SweepResult, measured: list[MeasuredStep]) -> SweepResult:
    """The winner becomes the measured fastest; each measured variant's verdict says where it
    ranks by measurement and how far its prediction was off."""
    if not measured:
        return replace(result, measured=[])
    order = sorted(measured, key=lambda step: -step.tokens_per_second)
    best = order[0]
    verdicts = dict(result.verdicts)
    for position, step in enumerate(order, start=1):
        old = verdicts[step.variant]
        outcome = WINNER if position == 1 else "slower"
        reason = "fastest measured" if position == 1 else (
            f"slower measured: {step.tokens_per_second:,.0f} tokens/s vs "
            f"{best.tokens_per_second:,.0f} for {best.variant}")
        verdicts[step.variant] = Verdict(step.variant, outcome, f"{reason}{_error(step)}",
                                         position, old.duplicate_of, old.host_link_line)
    names = {step.variant for step in measured}
    rest = sorted((v for v in verdicts.values() if v.rank is not None and v.variant not in names),
                  key=lambda verdict: verdict.rank or 0)
    for position, verdict in enumerate(rest, start=len(measured) + 1):  # after the measured
        verdicts[verdict.variant] = replace(
            verdict, rank=position, outcome="slower" if verdict.outcome == WINNER
            else verdict.outcome, reason=verdict.reason + "; not measured")
    return replace(result, winner=best.variant, verdicts=verdicts, measured=order)


def _error(step: MeasuredStep) -> str:
    if step.error is None or step.predicted_seconds is None:
        return f" ({step.measured_seconds * 1e3:.1f} ms; no prediction on this target)"
    return (f" ({step.measured_seconds * 1e3:.1f} ms measured, "
            f"{step.predicted_seconds * 1e3:.1f} ms predicted, {step.error:+.1%})")
