"""`hloscope trace` against xprof on a capture: per-op and per-program self time, op counts,
categories and the memory profile's peak, side by side; then the measured ops beside the per-op
step model.

xprof's converter (`xprof.convert.raw_to_tool_data`, tools hlo_stats, op_profile,
memory_profile; `pip install 'hloscope[xprof]'`) is the reference; hloscope reads the same file
with its own XSpace reader and embedded HLO (no --hlo). Default capture: the libtpu one of
../shared/wild-traces/ (4 TPU v6e cores, a host-offload test):

    python benchmarks/trace_vs_xprof.py [CAPTURE.xplane.pb]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "oracles")]
DEFAULT = ROOT.parent / "shared" / "wild-traces" / "xprof__tpu_inference_2__v1.xplane.pb"


def main(capture: Path) -> int:
    from xprof_oracle import xprof_figures

    import hloscope
    from hloscope.parsers.trace.xprof import native_logs_silenced

    started = time.perf_counter()
    result = hloscope.trace(capture, xprof=False)
    ours_s = time.perf_counter() - started
    started = time.perf_counter()
    with native_logs_silenced():
        theirs = xprof_figures(capture)
    xprof_s = time.perf_counter() - started
    stats = result.op_stats
    print(f"capture: {capture.name}\nhloscope {ours_s:.2f} s, xprof {xprof_s:.2f} s\n")
    print(f"{'program':<46} {'hloscope µs':>16} {'xprof µs':>16} {'diff':>9}")
    for program in stats.programs:
        name = f"{program.module}({program.program_id})"
        print(_line(name, program.self_us, theirs.programs.get(name)))
    print(_line("total", stats.total_us, sum(op.self_us for op in theirs.ops)))
    print(f"\n{'op':<32} {'category':<12} {'n':>5} {'xprof n':>7} {'hloscope µs':>16} "
          f"{'xprof µs':>16} {'diff':>9}")
    by_key = {(op.program_id, op.op): op for op in theirs.ops}
    for op in stats.ops:
        ref = by_key.get((op.program_id, op.op))
        count = ref.occurrences if ref else "-"
        print(f"{op.op:<32.32} {op.category:<12.12} {op.occurrences:>5} {count:>7} "
              f"{op.self_us:>16,.3f} {_us(ref.self_us if ref else None)} "
              f"{_diff(op.self_us, ref.self_us if ref else None)}")
    print(f"\nops: hloscope {len(stats.ops)}, xprof {len(theirs.ops)}; programs: hloscope "
          f"{len(stats.programs)}, xprof {len(theirs.programs)}")
    peak = result.extra.get("memory_profile_peak_bytes")
    print(f"memory profile peak in use: hloscope {peak:,} B, xprof "
          f"{max(theirs.memory_peaks.values(), default=0):,} B; hloscope's live peak of "
          f"{result.module_name}: {result.extra.get('live_peak_bytes') or 0:,} B")
    print("\ncategories (hloscope): " + ", ".join(
        f"{c.category} [{c.group}] {c.self_us / 1e6:,.2f} s" for c in stats.categories))
    _model_check(result)
    return 0


def _model_check(result) -> None:
    """The measured ops beside the per-op step model (where the capture's device is known)."""
    check = result.model_check
    if check is None:
        print("\nno step-model check: the device is unknown or has no calibration")
        return
    print(f"\nmeasured vs the step model on {check.device}: {check.module} step "
          f"{check.step_measured_s or 0:.3f} s measured, {check.step_predicted_s:.3f} s predicted")
    print(f"{'program':<22} {'op':<24} {'kind':<16} {'measured µs':>14} {'predicted µs':>14} "
          f"{'ratio':>7}  measured as")
    for row in check.ops:
        print(f"{row.module:<22.22} {row.op:<24.24} {row.kind:<16.16} {row.measured_us:>14,.1f} "
              f"{row.predicted_us:>14,.1f} {row.ratio:>7.3f}  {row.measured_as}")


def _line(name: str, ours: float, theirs: float | None) -> str:
    return f"{name:<46.46} {ours:>16,.3f} {_us(theirs)} {_diff(ours, theirs)}"


def _us(value: float | None) -> str:
    return f"{value:>16,.3f}" if value is not None else f"{'-':>16}"


def _diff(ours: float, theirs: float | None) -> str:
    if not theirs:
        return f"{'-':>9}"
    return f"{(ours - theirs) / theirs:>+9.4%}"


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT))
