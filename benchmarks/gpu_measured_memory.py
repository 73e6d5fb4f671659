"""Predicted against measured GPU memory: train steps run on a real GPU beside hloscope's
predictions of the same programs.

Two halves, because the machine with the GPU is not the one that compiles deviceless:

  measure  (on a GPU machine) runs `hloscope profile --platform gpu` for each policy and writes
           JSON: the device allocator's peak after the steps (`memory_stats()`), XLA's
           `memory_analysis()` of the real compile, the figures `hloscope memory` reads from the
           run's dump, and the trace's step times and MFU (`hloscope trace`).
  compare  (anywhere) compiles the same programs deviceless for --target, predicts every policy
           from the deviceless `full` (`analyses/predict`), and prints measured, compiled and
           predicted bytes with the errors.

The allocator's peak counts what the run held at once: the train state and the batch (the
step's arguments), its temporaries and the outputs not aliased to donated arguments, plus what
the CUDA libraries allocate through it. XLA's figure for the same program is
argument + output - alias + temp (`required`).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

POLICIES = ("full", "names:query_proj=device,attn_out=device,mlp_gate=device,mlp_up=device",
            "names:mlp_gate=device,mlp_up=device", "names:query_proj=device,attn_out=device",
            "names:mlp_gate=offload,mlp_up=offload")
"""llama-1b's `none` at batch 8 needs 237 GB (deviceless compile) and cannot run on one H100."""


def measure(args: argparse.Namespace) -> int:
    import hloscope

    rows = []
    for policy in args.policies.split(";"):
        with tempfile.TemporaryDirectory() as scratch:
            folder = (Path(args.keep) if args.keep else Path(scratch)) / _folder_name(policy)
            print(f"profiling {policy}", file=sys.stderr, flush=True)
            try:
                hloscope.profile(folder, model=args.model, policy=policy, steps=args.steps,
                                 platform=args.platform, seq_len=args.seq, batch=args.batch,
                                 **_overrides(args.set))
            except Exception as error:  # noqa: BLE001 - a policy that fails is a row
                rows.append({"policy": policy, "error": f"{type(error).__name__}: {error}"})
                continue
            rows.append(_measured_row(policy, folder, args.device))
    Path(args.out).write_text(json.dumps({"model": args.model, "seq": args.seq,
                                          "batch": args.batch, "overrides": _overrides(args.set),
                                          "rows": rows}, indent=2))
    return 0


def _overrides(items: list[str]) -> dict[str, Any]:
    """`--set attention=blockwise --set micro_batches=2` -> config fields."""
    found: dict[str, Any] = {}
    for item in items:
        key, _, value = item.partition("=")
        found[key] = int(value) if value.isdigit() else value
    return found


def _folder_name(policy: str) -> str:
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in policy)


def _measured_row(policy: str, folder: Path, device: str) -> dict[str, Any]:
    import hloscope

    manifest = json.loads((folder / "profile.json").read_text())
    memory = hloscope.memory(folder / "dump").to_dict()
    row = {"policy": policy, "device_kind": manifest.get("device_kind"),
           "versions": manifest.get("versions"), "device_memory": manifest["device_memory"],
           "host_step_seconds": manifest.get("step_seconds"),
           "live_peak_bytes": memory["peak_bytes"],
           "estimated_allocation_bytes": memory["estimated_allocation_bytes"],
           "allocation_bytes": memory.get("allocation_bytes")}
    try:
        traced = hloscope.trace(folder, device=device)
    except Exception as error:  # noqa: BLE001 - the memory figures stand without the trace
        return {**row, "trace_error": f"{type(error).__name__}: {error}"}
    return {**row, "step_times_us": traced.step_times_us, "mfu": traced.mfu, "hfu": traced.hfu,
            "remat_time_share": traced.remat_time_share,
            "unmatched_events": traced.unmatched_events, "trace_warnings": traced.warnings}


def compare(args: argparse.Namespace) -> int:
    import hloscope
    from hloscope.analyses.predict.model import Predictor
    from hloscope.configs.presets import preset_config
    from hloscope.formats.compile_record import MemoryFigures
    from hloscope.sweeps.frontier_run import baseline_from_build
    from hloscope.sweeps.grid import Grid
    from hloscope.units import format_bytes
    from hloscope.workloads.cache import default_cache_dir

    measured = json.loads(Path(args.measured).read_text())
    grid = Grid((measured["seq"],), (measured["batch"],))
    overrides = measured.get("overrides") or {}
    config = preset_config(measured["model"], seq_len=measured["seq"], batch=measured["batch"],
                           **overrides)

    def compiled(policy: str) -> tuple[int, Path]:
        outcome = hloscope.sweep(model=measured["model"], policies=[policy], target=args.target,
                                 cache=default_cache_dir(), grid=grid,
                                 config=config).outcomes[0]
        return outcome.figures.required_bytes, Path(outcome.folder)

    predictor = Predictor((baseline_from_build(compiled("full")[1]),))
    lines = [f"# python benchmarks/gpu_measured_memory.py {' '.join(sys.argv[1:])}",
             f"{measured['model']}, seq {measured['seq']}, batch {measured['batch']}"
             f"{''.join(f', {k}={v}' for k, v in overrides.items())}; measured "
             f"on {_first(measured, 'device_kind')} ({_jax_version(measured)}), compiled "
             f"deviceless for {args.target} (jax {hloscope_jax_version()})",
             "policy | measured: allocator peak / XLA required (real compile) | deviceless: "
             "compiled (error vs real) / predicted (error vs real) | measured step (fastest of "
             "the traced steps), MFU | predicted step (roofline)"]
    for row in measured["rows"]:
        if "error" in row:
            lines.append(f"{row['policy']} | failed on the GPU: {row['error'][:160]}")
            continue
        real = MemoryFigures.from_dict(row["device_memory"]["memory_analysis"]).allocated_bytes
        peak = row["device_memory"]["allocator"]["peak_bytes_in_use"]
        deviceless, _ = compiled(row["policy"])
        prediction = predictor.predict(row["policy"], measured["batch"],
                                       overrides.get("micro_batches", 1))
        predicted = prediction.device_bytes
        step_ms = min(row["step_times_us"]) / 1000
        lines.append(
            f"{row['policy']} | {format_bytes(peak)} / {format_bytes(real)} "
            f"({peak / real - 1:+.1%}) | {format_bytes(deviceless)} ({deviceless / real - 1:+.1%})"
            f" / {format_bytes(predicted)} ({predicted / real - 1:+.1%}) | {step_ms:.1f} ms, "
            f"MFU {row['mfu']:.1%} | {prediction.step_seconds * 1000:.1f} ms")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


def _first(measured: dict[str, Any], key: str) -> Any:
    return next((row[key] for row in measured["rows"] if key in row), None)


def _jax_version(measured: dict[str, Any]) -> str:
    versions = _first(measured, "versions") or {}
    return ", ".join(f"{name} {versions[name]}" for name in ("jax", "jaxlib") if name in versions)


def hloscope_jax_version() -> str:
    from importlib.metadata import version

    return version("jax")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("measure", help="on a GPU machine: profile each policy")
    run.add_argument("--model", default="llama-1b")
    run.add_argument("--seq", type=int, default=2048)
    run.add_argument("--batch", type=int, default=8)
    run.add_argument("--steps", type=int, default=3)
    run.add_argument("--platform", default="gpu", help="cpu: try the script without a GPU")
    run.add_argument("--device", default="h100", help="for MFU (hloscope trace --device)")
    run.add_argument("--policies", default=";".join(POLICIES))
    run.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                     help="a config field of the model (attention=blockwise, micro_batches=2)")
    run.add_argument("--out", required=True)
    run.add_argument("--keep", default=None, help="keep each profile folder under this folder")
    against = commands.add_parser("compare", help="deviceless compiles and predictions")
    against.add_argument("measured", help="the JSON `measure` wrote")
    against.add_argument("--target", default="gpu:h100:1x1x1")
    against.add_argument("--out", default=None)
    return parser.parse_args()


def main() -> int:
    args = _arguments()
    return measure(args) if args.command == "measure" else compare(args)


if __name__ == "__main__":
    raise SystemExit(main())
