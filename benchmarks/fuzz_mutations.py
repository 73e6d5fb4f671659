"""N seeded mutations of small real modules through the API: no crash, no hang, located errors.

Each input is one mutation (`tests/oracles/mutations.py`: truncations, deleted, duplicated, moved
and shuffled lines, flipped characters, inserted tokens) of a small real module, or a garbled
baseline checked against the intact module. It goes through `hloscope.load`, then `inspect`,
`flops`, `remat`, `memory` and `check` (against the intact module's baseline). Each outcome is
"ok", an hloscope error (its class; a ParseError must carry file:line:col), a crash (any other
exception), a timeout or a memory overrun. A worker process runs the inputs under a per-input
time cap (SIGALRM) and an address-space cap (RLIMIT_AS); a worker that dies or hangs past the cap
is replaced and its input counted.

    python benchmarks/fuzz_mutations.py [-n 10000] [--seed 0] [--time-cap 10]
                                        [--memory-cap-mib 2048]
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import resource
import signal
import sys
import tempfile
import time
from collections import Counter
from multiprocessing.connection import Connection
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "oracles"))
sys.path.insert(0, str(HERE.parent))

from mutations import garble_json, mutate, seed_modules  # noqa: E402

COMMANDS = ("load", "inspect", "flops", "remat", "memory", "check")
BASELINE_SHARE = 0.1  # of inputs that garble a baseline instead of the module


class _Timeout(Exception):
    pass


def _on_alarm(signum: int, frame: object) -> None:
    raise _Timeout


def _outcome(error: BaseException) -> str:
    from hloscope.errors import HloscopeError, ParseError

    if isinstance(error, _Timeout):
        return "timeout"
    if isinstance(error, MemoryError):
        return "memory"
    if isinstance(error, ParseError):
        located = error.location.line >= 1 and error.location.column >= 1
        return "error:ParseError" if located else "error:ParseError-without-location"
    if isinstance(error, HloscopeError):
        return f"error:{type(error).__name__}"
    return f"crash:{type(error).__name__}: {' '.join(str(error).split())[:120]}"


def _run_input(seed: int, seeds: list[tuple[str, str]], folder: Path) -> dict[str, str]:
    """Outcome per command of input number `seed`; the first failing stage ends the input."""
    import hloscope

    rng = random.Random(seed)
    name, original = seeds[rng.randrange(len(seeds))]
    baseline = folder / f"baseline-{name}.json"
    if not baseline.exists():
        hloscope.snapshot(hloscope.load(original), output=baseline, force=True)
    garbled_baseline = rng.random() < BASELINE_SHARE
    if garbled_baseline:
        text, kind = original, "baseline"
        mutated = folder / "garbled.json"
        mutated.write_text(garble_json(baseline.read_text(), rng))
        baseline = mutated
    else:
        kind, text = mutate(original, rng)
    path = folder / "input.hlo"
    path.write_text(text, errors="surrogatepass")
    outcomes: dict[str, str] = {"kind": kind}
    module = None
    for command in COMMANDS:
        try:
            if command == "load":
                module = hloscope.load(path)
            elif command == "check":
                hloscope.check(module, baseline, max_peak_increase="5%",
                               max_flops_increase="5%", allow_backend_change=True)
            else:
                getattr(hloscope, command)(module)
            outcomes[command] = "ok"
        except BaseException as error:  # noqa: BLE001  (classifying every outcome is the point)
            outcomes[command] = _outcome(error)
            if command == "load":
                break
    return outcomes


def _worker(connection: Connection, time_cap: float, memory_cap: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_cap, memory_cap))
    signal.signal(signal.SIGALRM, _on_alarm)
    sys.setrecursionlimit(10_000)
    seeds = seed_modules()
    with tempfile.TemporaryDirectory(prefix="hloscope-fuzz-") as folder:
        while True:
            seed = connection.recv()
            if seed is None:
                return
            signal.setitimer(signal.ITIMER_REAL, time_cap)
            try:
                result = _run_input(seed, seeds, Path(folder))
            except BaseException as error:  # noqa: BLE001
                result = {"kind": "?", "harness": _outcome(error)}
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            connection.send(result)


class _Pool:
    """One worker process, replaced when it dies or outlives the hard cap."""

    def __init__(self, time_cap: float, memory_cap: int) -> None:
        self.time_cap, self.memory_cap = time_cap, memory_cap
        self._start()

    def _start(self) -> None:
        self.connection, child = multiprocessing.Pipe()
        self.process = multiprocessing.Process(target=_worker,
                                               args=(child, self.time_cap, self.memory_cap),
                                               daemon=True)
        self.process.start()

    def run(self, seed: int) -> dict[str, str]:
        self.connection.send(seed)
        if self.connection.poll(self.time_cap * 3 + 30):
            try:
                return self.connection.recv()
            except EOFError:
                pass
            outcome = "died"
        else:
            outcome = "timeout-hard"
        self.process.kill()
        self.process.join()
        self._start()
        return {"kind": "?", "harness": outcome}

    def close(self) -> None:
        self.connection.send(None)
        self.process.join(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-cap", type=float, default=10.0, help="seconds per input")
    parser.add_argument("--memory-cap-mib", type=int, default=2048)
    args = parser.parse_args()
    pool = _Pool(args.time_cap, args.memory_cap_mib << 20)
    histogram: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    crashes: list[str] = []
    start = time.perf_counter()
    for number in range(args.seed, args.seed + args.n):
        result = pool.run(number)
        kinds[result.get("kind", "?")] += 1
        for command, outcome in result.items():
            if command == "kind":
                continue
            histogram[f"{command:8} {outcome}"] += 1
            if outcome.startswith(("crash", "timeout", "memory", "died")):
                crashes.append(f"seed {number} {command}: {outcome}")
    pool.close()
    seconds = time.perf_counter() - start
    _print(args, histogram, kinds, crashes, seconds)


def _print(args: argparse.Namespace, histogram: Counter[str], kinds: Counter[str],
           crashes: list[str], seconds: float) -> None:
    failed = [k for k in histogram if k.split(None, 1)[1].startswith(("crash", "died"))]
    hung = [k for k in histogram if "timeout" in k or " memory" in k]
    unlocated = [k for k in histogram if "without-location" in k]
    print(f"inputs: {args.n} (seeds {args.seed}..{args.seed + args.n - 1}), "
          f"{seconds:.0f} s, caps {args.time_cap:g} s and {args.memory_cap_mib} MiB per input")
    print("mutations: " + json.dumps(dict(sorted(kinds.items()))))
    print("outcomes (command, outcome: count):")
    for key, count in sorted(histogram.items()):
        print(f"  {key}: {count}")
    print(f"crashes: {sum(histogram[k] for k in failed)}")
    print(f"timeouts or memory overruns: {sum(histogram[k] for k in hung)}")
    print(f"parse errors without a location: {sum(histogram[k] for k in unlocated)}")
    for line in crashes[:50]:
        print(f"  {line}")


if __name__ == "__main__":
    main()
