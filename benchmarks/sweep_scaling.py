"""Sweep wall time with 1 and 2 workers, on the local executor and on Ray, in one run.

Each run compiles the same variants of the tiny model for the CPU target into a fresh cache
(every variant compiles; nothing comes from a cache), so the runs differ only in where and how
many compiles run at once. Ray is started once (`ray.init(num_cpus=2)`) before its runs, so its
start-up is not counted. Prints each time and the speed-ups: 2 workers over 1 for each executor,
and Ray over local at the same number of workers.

    python benchmarks/sweep_scaling.py [--policies none,full,...] [--repeat 1]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from hloscope.configs.policies import parse_variants
from hloscope.configs.presets import preset_config
from hloscope.sweeps.core import SweepRequest, run_sweep
from hloscope.sweeps.executor_base import ExecutorSpec

DEFAULT_POLICIES = "none,full,dots_saveable,save_named,nothing_saveable,partial:1"
WORKERS = (1, 2)


def sweep_seconds(policies: str, executor: str, workers: int) -> float:
    base = preset_config("tiny")
    with tempfile.TemporaryDirectory(prefix="hloscope-scaling-") as cache:
        request = SweepRequest(model="tiny", base=base, target="cpu", jobs=workers,
                               variants=tuple(parse_variants(policies, base)),
                               cache_root=Path(cache), executor=ExecutorSpec(executor))
        started = time.perf_counter()
        result = run_sweep(request)
        seconds = time.perf_counter() - started
    assert result.compiles == len(request.variants), "every variant must compile"
    return seconds


def best_of(repeat: int, policies: str, executor: str, workers: int) -> float:
    return min(sweep_seconds(policies, executor, workers) for _ in range(repeat))


def start_ray() -> bool:
    try:
        import ray
    except ImportError:
        print("ray: not installed (pip install 'hloscope[ray]'); Ray runs skipped")
        return False
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=128 << 20,
             log_to_driver=False, logging_level="ERROR")
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", default=DEFAULT_POLICIES)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    count = len(args.policies.split(","))
    print(f"{count} tiny CPU compiles per sweep, {os.cpu_count()} cores, best of {args.repeat}")
    times = {("local", n): best_of(args.repeat, args.policies, "local", n) for n in WORKERS}
    if start_ray():
        times |= {("ray", n): best_of(args.repeat, args.policies, "ray", n) for n in WORKERS}
    for (executor, workers), seconds in times.items():
        print(f"{executor:5} {workers} worker{'s' if workers > 1 else ' '}: {seconds:6.1f} s")
    for executor in ("local", "ray"):
        if (executor, 2) in times:
            ratio = times[(executor, 1)] / times[(executor, 2)]
            print(f"speed-up {executor}, 2 workers vs 1: {ratio:.2f}x")
    if ("ray", 2) in times:
        print(f"ray vs local, 2 workers: {times[('local', 2)] / times[('ray', 2)]:.2f}x "
              "(above 1: Ray faster)")


if __name__ == "__main__":
    main()
