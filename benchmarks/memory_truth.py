"""hloscope's live peak and allocation estimate against XLA's own buffer assignment.

For every program with XLA's `*-buffer-assignment.txt` and `*-live-range.txt` at hand (the
committed fixtures: CPU, GPU, TPU; the CPU programs the test oracles generate; and, with
--builds, the `hloscope build` folders in the cache), prints:

- the live peak (`hloscope memory`, from the HLO text) against the most memory XLA's buffer
  assignment holds at once: at each moment of its live ranges, the union of the slices
  (allocation, offset, size) of the values live then (tests/oracles/xla_occupancy.py), over the
  device memory spaces (not pinned host memory); on TPU over HBM (color 0), against the HBM
  live peak with libtpu's sizes (tiled, 512-byte granules: `heap.allocation_size`);
- the estimated allocation (`heap.py`, the buffer assigner and heap simulator replayed)
  against XLA's allocation (arguments + temporaries + outputs - aliased, from the buffer
  assignment; what memory_analysis() reports on CPU and GPU; on TPU libtpu's buffer assignment,
  not memory_analysis()).

`python benchmarks/memory_truth.py [--builds] [--families] [--dumps DIR] [--out FILE]`
(--families: benchmarks/tpu_families.py's cached dumps). The generators run in
child processes (JAX stays out of this one; ~2-4 min on 2 busy cores); --dumps keeps their
output to reuse with --reuse.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ORACLES = REPO / "tests" / "oracles"
FIXTURES = REPO / "fixtures"
GENERATORS = ("memory_programs.py", "memory_truth_programs.py", "scanned_programs.py",
              "layer_programs.py")


@dataclass(frozen=True)
class Row:
    source: str
    program: str
    backend: str
    live_peak: int
    held: int
    estimate: int | None
    allocation: int | None
    violations: tuple[str, ...] = ()
    moments_off: int | None = None  # TPU: moments whose HBM bytes differ from XLA's held

    @property
    def estimate_error(self) -> float | None:
        if self.estimate is None or not self.allocation:
            return None
        return self.estimate / self.allocation - 1


def measure(folder: Path, module: str | None, source: str, program: str,
            target: str | None = None) -> Row:
    sys.path.insert(0, str(ORACLES))
    from xla_occupancy import chunks, held_bytes

    from hloscope.analyses.memory.analysis import program_memory
    from hloscope.analyses.memory.invariants import violations
    from hloscope.analyses.memory.liveness.spaces import is_device_space
    from hloscope.loader.program import load_program
    from hloscope.parsers.xla_memory import memory_analysis_figures

    loaded = load_program(folder, module)
    result = program_memory(loaded, target=target)
    artifacts = loaded.xla_memory
    assignment = artifacts.read_buffer_assignment()
    tpu = result.backend == "tpu"
    device = {a.color for a in assignment.allocations if is_device_space(result.backend, a.color)}
    held = held_bytes(artifacts.read_live_range(), chunks(assignment, device))
    allocation = memory_analysis_figures(assignment, result.backend).allocated_bytes
    ours = _tpu_hbm_timeline(loaded.module, target or loaded.target) if tpu else None
    return Row(source, program, result.backend, result.peak_bytes if ours is None else max(ours),
               max(held), result.estimated_allocation_bytes, allocation,
               tuple(violations(result)),
               None if ours is None else sum(a != b for a, b in zip(ours, held, strict=True)))


def _tpu_hbm_timeline(module, target: str | None) -> list[int]:
    """The HBM live bytes at each moment with libtpu's allocation sizes (tiles, 512-byte
    granularity; tuple tables as the target's generation sizes them)."""
    from hloscope.analyses.memory.heap import allocation_size, place_buffers, tpu_generation
    from hloscope.analyses.memory.liveness import analyze_liveness
    from hloscope.analyses.memory.liveness.peak import live_bytes

    generation = tpu_generation(target)
    liveness = place_buffers(analyze_liveness(module), "tpu", generation).liveness
    return live_bytes(liveness, allocation_size("tpu", generation),
                      keep=lambda v: v.memory_space == 0)


def fixture_rows() -> list[Row]:
    """The tiny-model fixtures (meta.json) and the TPU family programs kept as fixtures
    (record.json: fixtures/tpu-families, fixtures/tpu-heap)."""
    described = sorted([*FIXTURES.glob("*/*/meta.json"), *FIXTURES.glob("tpu-*/*/record.json")])
    rows = [measure(m.parent, None, "fixture", f"{m.parent.parent.name}/{m.parent.name}",
                    json.loads(m.read_text()).get("target")) for m in described]
    oom = FIXTURES / "tpu-v5e-2x2-oom" / "dump"
    return rows + [measure(oom, None, "fixture", "tpu-v5e-2x2-oom/dump")]


def family_rows() -> list[Row]:
    """benchmarks/tpu_families.py's compiled programs (its cache; nothing is compiled here)."""
    cache = Path(os.environ.get("HLOSCOPE_FAMILIES_CACHE",
                                Path.home() / ".cache" / "hloscope-families"))
    rows = []
    for record in sorted(cache.glob("*/record.json")):
        info = json.loads(record.read_text())
        dump = record.parent / "dump"
        if not any(dump.glob("*live-range.txt")):
            continue
        try:
            rows.append(measure(dump, info.get("module_name"), "tpu_families",
                                f"{record.parent.name} {info['target']}", info["target"]))
        except Exception as error:  # noqa: BLE001 - a program that cannot be read is a line
            print(f"skipped {record.parent.name}: {type(error).__name__}: {error}",
                  file=sys.stderr)
    return rows


def generated_rows(dumps: Path, reuse: bool) -> list[Row]:
    rows = []
    for script in GENERATORS:
        out = dumps / script.removesuffix(".py")
        if not (reuse and (out / "programs.json").exists()):
            print(f"compiling {script}", file=sys.stderr, flush=True)
            subprocess.run([sys.executable, str(ORACLES / script), str(out / "dump"),
                            str(out / "programs.json")], check=True, capture_output=True,
                           env={**os.environ, "JAX_PLATFORMS": "cpu"}, timeout=900)
        described = json.loads((out / "programs.json").read_text())
        for name, info in described.items():
            rows.append(measure(out / "dump", info["module"], script.removesuffix(".py"), name))
    return rows


def build_rows() -> list[Row]:
    from hloscope.workloads.cache import default_cache_dir

    rows = []
    for folder in sorted((default_cache_dir() / "builds").glob("*/")):
        manifest = folder / "manifest.json"
        if not manifest.exists() or not any((folder / "dump").glob("*live-range.txt")):
            continue
        meta = json.loads(manifest.read_text())
        name = f"{folder.name[:6]} {meta.get('model')} {meta.get('variant')} {meta.get('target')}"
        try:
            rows.append(measure(folder, None, "build", name))
        except Exception as error:  # noqa: BLE001 - a build that cannot be read is a line
            print(f"skipped {folder.name} ({name}): {type(error).__name__}: {error}",
                  file=sys.stderr)
    return rows


def render(rows: list[Row]) -> str:
    lines = [f"{'source':<22} {'program':<40} {'be':<4} {'live peak':>12} {'held at once':>12} "
             f"{'diff':>7} {'estimate':>12} {'allocation':>12} {'est.err':>8}"]
    for r in rows:
        error = "" if r.estimate_error is None else f"{100 * r.estimate_error:+.3f}%"
        lines.append(f"{r.source:<22} {r.program[:40]:<40} {r.backend:<4} {r.live_peak:>12,} "
                     f"{r.held:>12,} {r.live_peak - r.held:>+7,} {r.estimate or 0:>12,} "
                     f"{r.allocation or 0:>12,} {error:>8}")
    lines += ["", *summary(rows)]
    return "\n".join(lines) + "\n"


def summary(rows: list[Row]) -> list[str]:
    out = []
    for backend in sorted({r.backend for r in rows}):
        chosen = [r for r in rows if r.backend == backend]
        exact = sum(r.live_peak == r.held for r in chosen)
        above = sum(r.allocation is not None and r.live_peak > r.allocation for r in chosen)
        below = sum(r.estimate is not None and r.estimate < r.live_peak for r in chosen)
        errors = [r.estimate_error for r in chosen if r.estimate_error is not None]
        worst = max(chosen, key=lambda r: abs(r.live_peak - r.held))
        broken = sum(bool(r.violations) for r in chosen)
        counted = [r for r in chosen if r.moments_off is not None]
        if counted:
            exact = f"{exact} ({sum(not r.moments_off for r in counted)} at every moment)"
        out.append(f"{backend}: {len(chosen)} programs; live peak = held at once on {exact} "
                   f"(largest difference {worst.live_peak - worst.held:+,} B, {worst.program}); "
                   f"live peak above XLA's allocation on {above}; estimate below the live peak "
                   f"on {below}; estimate vs allocation {100 * min(errors):+.3f}% .. "
                   f"{100 * max(errors):+.3f}%; invariants (invariants.py) broken on {broken}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", action="store_true", help="add the cached hloscope builds")
    parser.add_argument("--families", action="store_true",
                        help="add benchmarks/tpu_families.py's cached programs")
    parser.add_argument("--dumps", help="keep the generated programs' dumps here")
    parser.add_argument("--reuse", action="store_true", help="reuse the dumps in --dumps")
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        dumps = Path(args.dumps or scratch)
        rows = fixture_rows() + generated_rows(dumps, args.reuse and bool(args.dumps))
    if args.builds:
        rows += build_rows()
    if args.families:
        rows += family_rows()
    text = render(rows)
    print(text, end="")
    if args.out:
        flags = " --builds" * args.builds + " --families" * args.families
        Path(args.out).write_text(f"$ python benchmarks/memory_truth.py{flags}\n\n{text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
