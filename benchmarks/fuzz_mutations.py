"""N seeded mutations of real modules through the API: no crash, no hang, located errors.

The seed modules are the small real ones of `tests/oracles/mutations.py` and the scheduled ones of
`benchmarks/fuzz_seeds/` (XLA:CPU dumps of a while loop holding a conditional, a conv net, a bf16
MLP and a scanned transformer, written by its generate.py, and a hand-written module with async
start/update/done pairs, collectives, a fusion, a while loop and a conditional) and two of libtpu's
scheduled dumps among the fixtures (host offload in while loops on v5p, Adam on v4: TPU layouts,
tuple tables, `aliasing_operands` hints, the HBM heap's rules), so that inputs reach every
analysis. Each input is one garbling of a seed (`mutations.py`: truncations, deleted,
duplicated, moved and shuffled lines, flipped characters, inserted tokens), one or two structural
changes that keep the syntax (`structural_mutations.py`: a tuple index, a dimension, an element
type, an operand, a called computation, an opcode, a moved ROOT, ...), or a garbled baseline
checked against the intact module. It goes through `hloscope.load`, then `inspect`, `flops`,
`remat`, `memory` and `check` (against the intact module's baseline). Each outcome is "ok", an
hloscope error (its class; a ParseError must carry file:line:col), a crash (any other exception),
a timeout or a memory overrun. Worker processes run the inputs under a per-input time cap
(SIGALRM) and an address-space cap (RLIMIT_AS); a worker that dies or hangs past the cap is
replaced and its input counted.

    python benchmarks/fuzz_mutations.py [--mutations 2000] [--seed 0] [--workers 1]
        [--progress 1000] [--time-cap 10] [--memory-cap-mib 2048]
    python benchmarks/fuzz_mutations.py --show 1234 > input.hlo   # input number 1234's text
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
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "oracles"))
sys.path.insert(0, str(HERE.parent))

from mutations import garble_json, mutate, seed_modules  # noqa: E402
from structural_mutations import mutate_structure  # noqa: E402

COMMANDS = ("load", "inspect", "flops", "remat", "memory", "check")
BASELINE_SHARE = 0.1  # of inputs that garble a baseline instead of the module
STRUCTURAL_SHARE = 0.5  # of the others: changes that keep the syntax, so analyses run
SCHEDULED_SHARE = 0.7  # of inputs drawn from the scheduled seeds, the ones every analysis reads
SEED_FOLDER = HERE / "fuzz_seeds"
TPU_SEED_FOLDERS = (HERE.parent / "fixtures" / "tpu-families" / "offload-v5p-2x2x1",
                    HERE.parent / "fixtures" / "tpu-heap" / "adam-v4-2x2x1-k104")


def all_seeds() -> list[tuple[str, str]]:
    """(name, text) of every seed module: the tests' small ones, benchmarks/fuzz_seeds/ and the
    libtpu dumps of TPU_SEED_FOLDERS."""
    found = seed_modules()
    found += [(path.name, path.read_text()) for path in sorted(SEED_FOLDER.glob("*.hlo"))]
    found += [(f"{folder.name}.hlo", path.read_text()) for folder in TPU_SEED_FOLDERS
              for path in sorted(folder.glob("*.after_optimizations.txt"))]
    return found


class FuzzInput(NamedTuple):
    module: str  # the seed module's name
    original: str  # its intact text
    kind: str  # the mutation(s), `+`-joined; "baseline" for a garbled baseline
    text: str  # the text to load


def mutated_input(seed: int, seeds: list[tuple[str, str]]) -> FuzzInput:
    """Input number `seed`, drawn from its own random stream."""
    rng = random.Random(seed)
    scheduled = [found for found in seeds if "is_scheduled=true" in found[1].split("\n", 1)[0]]
    drawn_from = scheduled if scheduled and rng.random() < SCHEDULED_SHARE else seeds
    name, original = drawn_from[rng.randrange(len(drawn_from))]
    if rng.random() < BASELINE_SHARE:
        return FuzzInput(name, original, "baseline", original)
    if rng.random() < STRUCTURAL_SHARE:
        kinds, text = [], original
        for _ in range(rng.choice((1, 1, 2))):
            kind, text = mutate_structure(text, rng)
            kinds.append(kind)
        return FuzzInput(name, original, "+".join(kinds), text)
    kind, text = mutate(original, rng)
    return FuzzInput(name, original, kind, text)


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


def _baseline(name: str, original: str, folder: Path) -> Path:
    """The intact seed module's snapshot, made once per worker (outside the input's time cap:
    the first one also imports the analyses, which a loaded machine may take seconds over)."""
    import hloscope

    baseline = folder / f"baseline-{name}.json"
    if not baseline.exists():
        hloscope.snapshot(hloscope.load(original), output=baseline, force=True)
    return baseline


def _run_input(seed: int, seeds: list[tuple[str, str]], folder: Path) -> dict[str, str]:
    """Outcome per command of input number `seed`; a failed load ends the input."""
    import hloscope

    name, original, kind, text = mutated_input(seed, seeds)
    baseline = _baseline(name, original, folder)
    if kind == "baseline":
        mutated = folder / "garbled.json"
        mutated.write_text(garble_json(baseline.read_text(), random.Random(seed)))
        baseline = mutated
    path = folder / "input.hlo"
    path.write_text(text, errors="surrogatepass")
    outcomes: dict[str, str] = {"kind": kind.split("+")[0], "module": name}
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
    seeds = all_seeds()
    with tempfile.TemporaryDirectory(prefix="hloscope-fuzz-") as folder:
        while True:
            seed = connection.recv()
            if seed is None:
                return
            drawn = mutated_input(seed, seeds)
            _baseline(drawn.module, drawn.original, Path(folder))
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

    def send(self, seed: int) -> None:
        self.connection.send(seed)

    def receive(self) -> dict[str, str]:
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


class _Tally:
    """Outcome counts per command, per mutation kind and per seed module."""

    def __init__(self) -> None:
        self.histogram: Counter[str] = Counter()
        self.kinds: Counter[str] = Counter()
        self.analysed: Counter[str] = Counter()  # seed module -> inputs whose memory ran ok
        self.crashes: list[str] = []
        self.count = 0

    def add(self, number: int, result: dict[str, str]) -> None:
        self.count += 1
        self.kinds[result.get("kind", "?")] += 1
        if result.get("memory") == "ok":
            self.analysed[result.get("module", "?")] += 1
        for command, outcome in result.items():
            if command in ("kind", "module"):
                continue
            self.histogram[f"{command:8} {outcome}"] += 1
            if outcome.startswith(("crash", "timeout", "memory", "died")):
                self.crashes.append(f"input {number} {command}: {outcome}")
                print(f"input {number} {command}: {outcome}", file=sys.stderr, flush=True)

    @property
    def crash_count(self) -> int:
        return sum(count for key, count in self.histogram.items()
                   if key.split(None, 1)[1].startswith(("crash", "died")))


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutations", "-n", type=int, default=2000, dest="mutations",
                        help="how many inputs (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="number of the first input")
    parser.add_argument("--workers", type=int, default=1, help="worker processes")
    parser.add_argument("--progress", type=int, default=0,
                        help="a progress line on stderr every N inputs (0: none)")
    parser.add_argument("--time-cap", type=float, default=10.0, help="seconds per input")
    parser.add_argument("--memory-cap-mib", type=int, default=2048)
    parser.add_argument("--show", type=int, metavar="N",
                        help="print input number N's text (its module and kind on stderr)")
    return parser.parse_args()


def main() -> None:
    args = _arguments()
    if args.show is not None:
        found = mutated_input(args.show, all_seeds())
        print(f"module {found.module}, mutation {found.kind}", file=sys.stderr)
        sys.stdout.write(found.text)
        return
    pools = [_Pool(args.time_cap, args.memory_cap_mib << 20) for _ in range(args.workers)]
    tally = _Tally()
    start = time.perf_counter()
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        _run_all(args, pools, tally, start)
    except KeyboardInterrupt:  # SIGINT or SIGTERM: the summary of the inputs run so far
        print(f"stopped after {tally.count} inputs", file=sys.stderr, flush=True)
    for pool in pools:
        pool.close()
    _print(args, tally, time.perf_counter() - start)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _run_all(args: argparse.Namespace, pools: list[_Pool], tally: _Tally, start: float) -> None:
    numbers = range(args.seed, args.seed + args.mutations)
    for first in range(0, len(numbers), len(pools)):
        batch = numbers[first : first + len(pools)]
        for pool, number in zip(pools, batch, strict=False):
            pool.send(number)
        results = [pool.receive() for pool in pools[: len(batch)]]
        for number, result in zip(batch, results, strict=True):
            tally.add(number, result)
        done = first + len(batch)
        if args.progress and done // args.progress != first // args.progress:
            print(f"{done}/{args.mutations} inputs, {time.perf_counter() - start:.0f} s, "
                  f"crashes {tally.crash_count}", file=sys.stderr, flush=True)


def _print(args: argparse.Namespace, tally: _Tally, seconds: float) -> None:
    histogram = tally.histogram
    hung = [k for k in histogram if "timeout" in k or " memory" in k]
    unlocated = [k for k in histogram if "without-location" in k]
    print(f"inputs: {tally.count} (numbers {args.seed}..{args.seed + tally.count - 1}), "
          f"{seconds:.0f} s with {args.workers} worker(s), caps {args.time_cap:g} s and "
          f"{args.memory_cap_mib} MiB per input")
    print("mutations: " + json.dumps(dict(sorted(tally.kinds.items()))))
    print("inputs whose memory analysis ran, per seed module: "
          + json.dumps(dict(sorted(tally.analysed.items()))))
    print("outcomes (command, outcome: count):")
    for key, count in sorted(histogram.items()):
        print(f"  {key}: {count}")
    print(f"crashes: {tally.crash_count}")
    print(f"timeouts or memory overruns: {sum(histogram[k] for k in hung)}")
    print(f"parse errors without a location: {sum(histogram[k] for k in unlocated)}")
    for line in tally.crashes[:50]:
        print(f"  {line}")


if __name__ == "__main__":
    main()
