"""The per-op step model on TPU programs, deviceless: what it predicts where no TPU is at hand.

No TPU step has been measured here, so these are predictions set against published figures,
not checks of the calibration (every TPU figure in hloscope/analyses/steptime/calibration.py is
a stated default):

  nested   llama-1b, full vs nested:4 (block sqrt(16)), on v5e:2x2 and v6e:2x2: the predicted
           MFU hit 1 - full's step / nested's step against the note's 20% (docs/llama-70b.md)
  seed70b  the seed's run: llama-70b on 4 x v6e-128, seq 4096, batch 3072, full / nested:8 /
           offload_carries: the winner, its reason and offload's host-link line
  maxtext  MaxText PR 546 (Llama 2 70B on v5p-128: 65% MFU with q/k/v projections offloaded, 63%
           without): llama-70b with Llama 2's vocabulary (32000), splash attention, seq 4096,
           4 sequences per device, full vs q/k/v offloaded
  ici70b   llama-70b on 4 x v5e-256 (FSDP 256 in a slice), seq 4096, batch 1024: which
           collectives make its ICI payload

Each part compiles through the build cache (a rerun compiles nothing). MFU here is hloscope
trace's: (FLOPs - recomputed FLOPs) / step / the device's peak bf16 FLOP/s.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

PARTS = ("nested", "seed70b", "maxtext", "ici70b")


def sweep(model: str, target: str, policies: str, **options: Any) -> Any:
    import hloscope
    from hloscope.workloads.cache import default_cache_dir

    print(f"sweeping {model} on {target}: {policies}", file=sys.stderr, flush=True)
    return hloscope.sweep(model=model, policies=policies, target=target,
                          cache=default_cache_dir(), **options)


def mfu(row: dict[str, Any], peak: float, devices: int = 1) -> float | None:
    if not row["step_seconds"] or row["total_flops"] is None:
        return None
    return (row["total_flops"] - row["recompute_flops"]) / row["step_seconds"] / peak


def rows_of(result: Any) -> dict[str, dict[str, Any]]:
    return {row["variant"]: row for row in result.to_dict()["variants"]}


def nested() -> list[str]:
    from hloscope.devices import get_device

    lines = ["## nested: llama-1b, full vs nested:4, seq 2048, global batch 16"]
    for target in ("tpu:v5e:2x2", "tpu:v6e:2x2"):
        rows = rows_of(sweep("llama-1b", target, "full,nested:4"))
        full, deep = rows["full"], rows["nested:4"]
        peak = get_device(target.split(":")[1]).peak_flops.bf16 or 0.0
        hit = 1 - full["step_seconds"] / deep["step_seconds"]
        flop_hit = 1 - full["total_flops"] / deep["total_flops"]
        roof_hit = 1 - full["overlapped_seconds"] / deep["overlapped_seconds"]
        lines.append(
            f"{target}: full {full['step_seconds']:.3f} s ({full['step_dominant']}), nested:4 "
            f"{deep['step_seconds']:.3f} s ({deep['step_dominant']}); predicted MFU hit "
            f"{hit:.1%} (FLOP ratio {flop_hit:.1%}, old roofline {roof_hit:.1%}); MFU full "
            f"{mfu(full, peak):.1%}, nested {mfu(deep, peak):.1%}")
    return lines


def seed70b() -> list[str]:
    result = sweep("llama-70b", "tpu:v6e-128:slices=4", "full,nested:8,offload_carries",
                   seq_len=4096, batch=3072)
    lines = ["## seed70b: llama-70b on 4 x v6e-128, seq 4096, global batch 3072",
             f"winner: {result.winner}: {result.verdicts[result.winner].reason}"]
    for variant, row in rows_of(result).items():
        step = row["step_time"] or {}
        lines.append(f"{variant}: {row['outcome']}; step {_s(row['step_seconds'])} "
                     f"({row['step_dominant']}); exposed {step.get('exposed_by_link')}; "
                     f"{row['reason']}")
        if row.get("host_link_line"):
            lines.append(f"  host link: {row['host_link_line']}")
        if step.get("seconds_without_host"):
            lines += host_wait(result, variant)
    return lines


def maxtext() -> list[str]:
    from hloscope.devices import get_device

    offload = "names:query_proj=offload,key_proj=offload,value_proj=offload"
    result = sweep("llama-70b", "tpu:v5p-128", f"full,{offload}", seq_len=4096, batch=256,
                   vocab=32000, attention="splash")
    peak = get_device("v5p").peak_flops.bf16 or 0.0
    lines = ["## maxtext: llama-70b (vocab 32000, splash) on v5p-128, seq 4096, global batch 256 "
             "(4 per device); MaxText PR 546 measured 63% (without offload) and 65% (q/k/v "
             "offloaded)", f"winner: {result.winner}: {result.verdicts[result.winner].reason}"]
    for variant, row in rows_of(result).items():
        value = mfu(row, peak)
        lines.append(f"{variant}: {row['outcome']}, step {_s(row['step_seconds'])} "
                     f"({row['step_dominant']}), predicted MFU "
                     f"{'-' if value is None else f'{value:.1%}'}")
        free = (row["step_time"] or {}).get("seconds_without_host")
        if free:
            lines.append(f"  with a host link of no cost: {free:.3f} s, MFU "
                         f"{mfu({**row, 'step_seconds': free}, peak):.1%}")
        if row.get("host_link_line"):
            lines.append(f"  host link: {row['host_link_line']}")
        if free:
            lines += host_wait(result, variant)
    return lines


def host_wait(result: Any, variant: str) -> list[str]:
    """Where `variant`'s program waits on the host link: its exposed host time, and for its
    largest transfer the compute libtpu's schedule puts between the start and the done."""
    from hloscope.analyses.summary.variant import collective_links, per_op_step
    from hloscope.loader.build import load_build

    folder = next(o.folder for o in result.outcomes if o.case.variant.name == variant)
    loaded = load_build(Path(folder))
    assert loaded.module is not None
    timed = per_op_step(loaded, "bfloat16", collective_links(loaded.module, loaded.build))
    assert timed is not None
    busy = {k: v for k, v in timed.link_busy_seconds.items() if k.startswith("host")}
    exposed = {k: v for k, v in timed.exposed_by_link.items() if k.startswith("host")}
    largest = max((op for op in timed.ops if op.kind == "host transfer"),
                  key=lambda op: op.total_seconds)
    records = {op.name: op for op in timed.ops if op.computation == largest.computation}
    window, started = 0.0, False
    for instruction in loaded.module.computation(largest.computation).instructions:
        if instruction.name == largest.name:
            started = True
        elif started and largest.name in instruction.operands:
            break
        elif started and instruction.name in records and \
                records[instruction.name].kind not in ("host transfer", "collective"):
            window += records[instruction.name].seconds
    return [f"  host link busy {sum(busy.values()):.3f} s, exposed {sum(exposed.values()):.3f} s "
            f"({', '.join(f'{k} {v:.3f} s' for k, v in exposed.items())})",
            f"  largest transfer: {largest.name} in {largest.computation} x {largest.executions}, "
            f"{largest.seconds * 1e3:.2f} ms each at the default link; libtpu's schedule waits "
            f"for it after {window * 1e3:.2f} ms of compute"]


def ici70b() -> list[str]:
    from hloscope.analyses.cost import CostAnalysis
    from hloscope.analyses.summary.variant import collective_links
    from hloscope.formats.build import HLO_FILE, read_build
    from hloscope.loader.hlo_input import load_input

    result = sweep("llama-70b", "tpu:v5e:16x16:slices=4", "full", seq_len=4096,
                   batch=1024)
    outcome = result.outcomes[0]
    lines = ["## ici70b: llama-70b on 4 x v5e-256, seq 4096, global batch 1024, full",
             f"{outcome.variant}: {outcome.figures.status}"]
    folder = Path(outcome.folder)
    if not (folder / HLO_FILE).exists():
        return [*lines, "no optimized program (the compile did not finish)"]
    module = load_input(folder / HLO_FILE)
    links = collective_links(module, read_build(folder))
    if links is None:
        return [*lines, "no device assignment recorded"]
    total = sum(row.bytes for row in links.rows)
    lines.append(f"collective payload per device per step: ICI {links.ici_bytes / 1e12:.3f} TB, "
                 f"DCN {links.dcn_bytes / 1e12:.3f} TB, unknown {links.unknown_bytes / 1e12:.3f}"
                 f" TB, {len(links.rows)} collectives")
    analysis = CostAnalysis(module)
    callers = _callers(module)
    for row in sorted(links.rows, key=lambda r: -r.bytes)[:10]:
        inner = next(i for i in module.computations[row.computation].instructions
                     if i.name == row.instruction)
        once = analysis.computation_costs(row.computation).costs[
            module.computations[row.computation].instructions.index(inner)].collective_bytes
        lines.append(f"  {row.bytes / 1e9:7.1f} GB ({row.bytes / total:5.1%}): {row.opcode} "
                     f"{inner.shape_text.split('{')[0]} over {row.group_size} devices, "
                     f"{once / 1e6:.0f} MB x {row.bytes // max(once, 1)} runs, in "
                     f"{' <- '.join(callers(row.computation))}")
    step = rows_of(result)[outcome.variant]
    timed = step["step_time"] or {}
    lines.append(f"per-op step {_s(step['step_seconds'])} ({step['step_dominant']}), ICI busy "
                 f"{timed.get('link_busy_seconds', {}).get('ici', 0):.2f} s, exposed "
                 f"{timed.get('exposed_by_link', {}).get('ici', 0):.2f} s; old roofline ICI "
                 f"term {_s(step['ici_seconds'])}")
    return lines


def _callers(module: Any) -> Any:
    """computation -> the chain of (instruction in computation) that runs it, up to the entry."""
    called_by: dict[str, tuple[str, str]] = {}
    for name, computation in module.computations.items():
        for instruction in computation.instructions:
            for callee in instruction.called_computations:
                called_by.setdefault(callee, (name, instruction.name))

    def chain(name: str) -> list[str]:
        found = []
        while name in called_by and len(found) < 6:
            name, instruction = called_by[name]
            found.append(f"{instruction} ({name})")
        return found

    return chain


def _s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.3f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", metavar="PART", help=f"some of {PARTS} (default: all)")
    parser.add_argument("--out", default=None, help="also write the lines here")
    args = parser.parse_args()
    unknown = [part for part in args.parts if part not in PARTS]
    if unknown:
        parser.error(f"unknown parts {unknown}: choose from {PARTS}")
    args.parts = args.parts or list(PARTS)
    lines = [f"# python benchmarks/step_time_tpu.py {' '.join(sys.argv[1:])}".rstrip()]
    for part in args.parts:
        lines += globals()[part]()
        print("\n".join(lines[-20:]), flush=True)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
