"""The README's timings, measured: its main job cold and cached, and its test command.

    python benchmarks/readme_timings.py [--runs 3] [--only main|tests] [--short] [--out FILE]

The main job is the README's first command, read from the README itself (the `hloscope sweep`
of its first bash block, run as `python -m hloscope` with this interpreter), so the figure is
always for the command the README shows. Each cold run gets a new empty build cache
(HLOSCOPE_CACHE_DIR); the cached run repeats it on the cache the cold run filled. For each run
the wall time and the seconds until the first line on stderr (the start line: how long the job
is silent) are recorded; the test command (`python -m pytest -q`, the README's) is timed whole.
Each figure is the median of `--runs` runs. The report -- machine, load, versions, every sample
and the medians -- goes to `--out` (default benchmarks/results/readme_timings.txt) and the last
cold run's output, the README's sample, to readme_main_job.txt beside it; the same command with
`--details` (every column and the per-name table), run once more on that run's cache, to
readme_main_job_details.txt. `--short` checks the
script itself in a minute: a two-variant tiny sweep on the CPU and one small test file, written
to benchmarks/_generated/ unless --out says otherwise.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
SHORT_MAIN = ["sweep", "--model", "tiny", "--target", "cpu", "--policies", "none,full"]
SHORT_TESTS = ["tests/test_optional.py"]


def readme_main_job(readme: Path = REPO / "README.md") -> list[str]:
    """The arguments of the README's first `hloscope ...` command (its first bash block)."""
    block = re.search(r"```bash\n(.*?)```", readme.read_text(), re.S)
    if block is None:
        raise SystemExit("README.md has no bash block")
    command = block.group(1).replace("\\\n", " ")
    found = re.search(r"\bhloscope (.+)", command)
    if found is None:
        raise SystemExit("the README's first bash block runs no hloscope command")
    return shlex.split(found.group(1))


@dataclass
class Run:
    seconds: float
    first_output_seconds: float | None
    returncode: int
    stdout: str = ""


@dataclass
class Measure:
    name: str
    command: list[str]
    runs: list[Run] = field(default_factory=list)

    def median(self) -> float:
        return statistics.median(run.seconds for run in self.runs)

    def median_silence(self) -> float | None:
        firsts = [r.first_output_seconds for r in self.runs if r.first_output_seconds is not None]
        return statistics.median(firsts) if firsts else None


def timed(command: list[str], env: dict[str, str]) -> Run:
    """Runs `command`; the wall time, and when its first stderr line arrived."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    first: list[float] = []

    def read_stderr() -> None:
        assert process.stderr is not None
        for _ in process.stderr:
            if not first:
                first.append(time.perf_counter() - started)

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    stdout = process.stdout.read() if process.stdout is not None else ""
    code = process.wait()
    seconds = time.perf_counter() - started
    reader.join()
    return Run(seconds, first[0] if first else None, code, stdout)


def measure_main(arguments: list[str], runs: int) -> tuple[Measure, Measure, str]:
    """The cold and cached measures, and the `--details` output of the last run's cache."""
    command = [sys.executable, "-m", "hloscope", *arguments]
    cold, cached = Measure("main job, cold cache", command), Measure("main job, cached", command)
    details = ""
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="hloscope-readme-timing-") as cache:
            env = {**os.environ, "HLOSCOPE_CACHE_DIR": cache}
            cold.runs.append(timed(command, env))
            cached.runs.append(timed(command, env))
            details = timed([*command, "--details"], env).stdout
    return cold, cached, details


def measure_tests(paths: list[str], runs: int) -> Measure:
    command = [sys.executable, "-m", "pytest", "-q", *paths]  # the README's test command
    tests = Measure("test suite (python -m pytest -q)", command)
    for _ in range(runs):
        tests.runs.append(timed(command, dict(os.environ)))
    return tests


def report(measures: list[Measure], runs: int) -> str:
    lines = [f"# python benchmarks/readme_timings.py --runs {runs}",
             f"date:     {datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds')}",
             f"machine:  {os.cpu_count()} CPUs, {platform.machine()}, {_memory()}",
             f"load:     {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1/5/15 min, at the end)",
             f"python:   {platform.python_version()}; {_versions()}",
             f"commit:   {_commit()}", ""]
    for measure in measures:
        lines.append(f"{measure.name}: {shlex.join(measure.command[1:])}")
        for number, run in enumerate(measure.runs, 1):
            silent = ("-" if run.first_output_seconds is None
                      else f"{run.first_output_seconds:.1f}")
            lines.append(f"  run {number}: {run.seconds:.1f} s, first stderr line after "
                         f"{silent} s, exit status {run.returncode}")
        silence = measure.median_silence()
        lines.append(f"  median: {measure.median():.1f} s ({measure.median() / 60:.1f} min)"
                     + ("" if silence is None else f"; first stderr line after {silence:.1f} s"))
        lines.append("")
    return "\n".join(lines)


def _memory() -> str:
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return "memory unknown"
    return f"{pages / 2**30:.0f} GiB"


def _versions() -> str:
    import importlib.metadata as metadata

    found = []
    for name in ("hloscope", "jax", "jaxlib", "libtpu"):
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} absent")
    return ", ".join(found)


def _commit() -> str:
    done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=("main", "tests"), default=None)
    parser.add_argument("--short", action="store_true",
                        help="a tiny CPU sweep and one test file: checks this script")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    default_out = (REPO / "benchmarks" / "_generated" if args.short else RESULTS)
    out = args.out or default_out / "readme_timings.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    measures: list[Measure] = []
    if args.only in (None, "main"):
        cold, cached, details = measure_main(SHORT_MAIN if args.short else readme_main_job(),
                                             args.runs)
        measures += [cold, cached]
        (out.parent / "readme_main_job.txt").write_text(cold.runs[-1].stdout)
        (out.parent / "readme_main_job_details.txt").write_text(details)
    if args.only in (None, "tests"):
        measures.append(measure_tests(SHORT_TESTS if args.short else [], args.runs))
    text = report(measures, args.runs)
    out.write_text(text + "\n")
    print(text)
    failed = [m.name for m in measures for r in m.runs if r.returncode != 0]
    if failed:
        print(f"warning: non-zero exit status in: {', '.join(sorted(set(failed)))}",
              file=sys.stderr)


if __name__ == "__main__":
    main()
