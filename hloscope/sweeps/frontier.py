"""`--search frontier`: per batch, the fastest per-tensor policy that fits, predicted over the
whole `names:` space and confirmed by as few compiles as possible (no jax).

Compiled `full` baselines (at the grid's smallest batch and the largest batch predicted to fit)
let `analyses.predict` predict every candidate (3^N device / offload / remat choices of the
block's names, at every batch); each round then ranks the candidates by step time and compiles
the predicted winner, plus at most one faster candidate just above the capacity, until a
compiled winner fits (MAX_ROUNDS at most). Fit is judged by each prediction's need
(`Prediction.device_bytes`); a row's `predicted_bytes` is the allocation XLA is predicted to
report (on TPU, with libtpu's loss order read from compiled builds: `loss_order_of`,
`_settle_by_neighbours`). The rules, round by round: see docs/frontier.md, 'The search, round
by round'.
"""
from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hloscope.analyses.predict.baseline import Baseline, baseline_batch
from hloscope.analyses.predict.model import Prediction, Predictor
from hloscope.configs.tensors import CHOICES, block_names, encode_named
from hloscope.dataframes import Rendered
from hloscope.errors import UsageError

MAX_ROUNDS = 6
BASELINE = "full"


@dataclass
class Candidate:
    prediction: Prediction
    compiled_bytes: int | None = None
    compiled_ok: bool = True  # the compile succeeded (False: an error, never chosen)
    folder: str | None = None
    calibrated_bytes: int = 0  # the search's figure: compiled, or predicted + a neighbour's error
    held_bytes: int | None = None  # the allocation of its figure when it chose to compile it
    # (None: not predicted, the loss order open: `Prediction.loss_order_open`)
    compiled_step_s: float | None = None  # the compiled program's own step (per-op model)

    @property
    def known_bytes(self) -> int:
        return self.compiled_bytes if self.compiled_bytes is not None \
            else self.prediction.device_bytes

    def row(self, capacity: int, chosen: bool) -> dict[str, Any]:
        p = self.prediction
        return {"batch": p.batch, "policy": p.policy, "choices": p.choices,
                "status": "predicted" if self.compiled_bytes is None else "compiled",
                "chosen": chosen, "predicted_bytes": p.allocation_bytes,
                "predicted_need_bytes": p.device_bytes, "squeezed": p.squeezed,
                "predicted_loss_order_bytes": p.undecided_loss_orders(),
                "loss_order": p.loss_order,
                "compiled_bytes": self.compiled_bytes, "predicted_host_bytes": p.host_bytes,
                "predicted_flops": p.flops, "predicted_step_s": p.step_seconds,
                "predicted_step_dominant": None if p.step is None else p.step.dominant,
                "predicted_exposed_s": None if p.step is None else p.step.exposed_seconds,
                "predicted_tokens_per_s": p.tokens_per_second,
                "fits": self.compiled_ok and self.known_bytes <= capacity,
                "prediction_error": None if not self.compiled_bytes
                else p.allocation_bytes / self.compiled_bytes - 1,
                "search_predicted_bytes": self.held_bytes,
                "compiled_step_s": self.compiled_step_s,
                "explain": p.explain(), "build_folder": self.folder}


@dataclass
class FrontierResult(Rendered):
    capacity: int
    batches: tuple[int, ...]
    names: tuple[str, ...]
    rows: list[dict[str, Any]]
    compiles: int
    candidates: int
    baselines: list[Baseline] = field(default_factory=list)
    choices: tuple[str, ...] = CHOICES
    measured: dict[str, Any] | None = None  # a user step's names measured (`MeasuredBlock`)

    @property
    def winners(self) -> dict[int, str | None]:
        chosen = {row["batch"]: row["policy"] for row in self.rows if row["chosen"]}
        return {batch: chosen.get(batch) for batch in self.batches}

    def to_dict(self) -> dict[str, Any]:
        return {"search": "frontier", "capacity_bytes": self.capacity,
                "names": list(self.names), "choices": list(self.choices),
                "batches": list(self.batches),
                "winners": {str(b): w for b, w in self.winners.items()},
                "compiles": self.compiles, "candidates": self.candidates,
                "rows": self.rows, "baselines": [b.to_dict() for b in self.baselines],
                "measured_names": self.measured}

    def frames(self) -> dict[str, list[dict[str, Any]]]:
        keep = ("batch", "policy", "status", "chosen", "predicted_bytes", "compiled_bytes",
                "prediction_error", "predicted_step_s", "fits")
        return {"frontier": [{k: row[k] for k in keep} for row in self.rows]}


def policy_space(names: tuple[str, ...], block: tuple[str, ...] | None = None,
                 choices: tuple[str, ...] = CHOICES) -> list[str]:
    """Every `names:` policy choosing one of `choices` for each of `names`, the block's other
    names (`block`, default `names`) recomputed, in their stored form (`spec.tensors`)."""
    block = names if block is None else block
    return [encode_named(dict(zip(names, combo, strict=True)), block)
            for combo in itertools.product(choices, repeat=len(names))]


def restrict(searchable: tuple[str, ...], names: str | Sequence[str] | None,
             choices: str | Sequence[str] | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The names (`--names a,b`) and choices (`--choices device,remat`) a search varies:
    default all; an unknown one is refused with the valid ones listed."""
    return (_subset(names, searchable, "name"), _subset(choices, CHOICES, "choice"))


def _subset(given: str | Sequence[str] | None, valid: tuple[str, ...],
            what: str) -> tuple[str, ...]:
    if given is None:
        return valid
    items = [i.strip() for i in (given.split(",") if isinstance(given, str) else given)]
    items = list(dict.fromkeys(filter(None, items)))
    unknown = [i for i in items if i not in valid]
    if unknown or not items:
        raise UsageError(f"unknown {what} {', '.join(map(repr, unknown)) or '(none given)'} "
                         f"for --search frontier; valid: {', '.join(valid)}")
    return tuple(i for i in valid if i in items)


class FrontierSearch:
    """The search of the module docstring; `compile_batch(policies, batch)` compiles and
    returns {policy: (allocation bytes or None on failure, build folder[, the compiled
    program's step estimate in seconds or None])} and the count of compiles it made;
    `predictor_of` makes the predictor from the baselines (a user's step: `StepPredictor` with
    its measured names); `compiled` holds programs compiled before the search (a user step's
    names measured), (policy, batch) -> the figures `compile_batch` returns: candidates with
    their compiled figures from the start; `loss_order_of(build folder)` reads libtpu's loss
    order from a compile (`analyses.predict.loss_order`; None: not read)."""

    def __init__(self, compile_batch: Callable[..., Any], baseline_of: Callable[[Path], Baseline],
                 base_policies: list[str], batches: tuple[int, ...], capacity: int,
                 names: tuple[str, ...],
                 predictor_of: Callable[[tuple[Baseline, ...]], Predictor] = Predictor,
                 compiled: dict[tuple[str, int], tuple] | None = None,
                 loss_order_of: Callable[[str], str | None] | None = None) -> None:
        self.compile_batch = compile_batch
        self.compiled_before = dict(compiled or {})  # (policy, batch) -> figures, as compiled
        self.baseline_of = baseline_of  # a build folder -> its Baseline
        self.predictor_of = predictor_of
        self.policies = base_policies
        self.batches = tuple(sorted(batches))
        self.capacity = capacity
        self.names = names
        self.compiles = 0
        self.baselines: list[Baseline] = []
        self.steps: dict[tuple[str, int], float | None] = {}  # compiled step estimates
        self.overestimate = 0.0  # the largest predicted / compiled - 1 seen so far
        self.loss_order_of = loss_order_of
        self.orders: dict[tuple[str, int], str] = {}  # libtpu's loss order, read from compiles
        self._full_overflows: int | None = None  # the smallest batch `full` does not fit

    def run(self) -> FrontierResult:
        self._baselines()
        rows: list[dict[str, Any]] = []
        for batch in self.batches:
            if self._full_overflows is not None and batch > self._full_overflows:
                continue  # `full` does not fit at a smaller batch: nothing is searched here
            candidates = self._predicted(batch, {})
            self._compiled_before(candidates, batch)
            winner = self._search(candidates, batch)
            if winner is None:
                self._overflows_at(batch)
            rows += [c.row(self.capacity, c is winner) for c in candidates.values()
                     if c.compiled_bytes is not None or c is winner]
        return FrontierResult(self.capacity, self.batches, self.names, rows, self.compiles,
                              len(self.policies) * len(self.batches), list(self.baselines))

    def _baselines(self) -> None:
        first = self._baseline_at(self.batches[0])
        if first is None:
            raise UsageError(f"the `full` baseline did not compile at batch {self.batches[0]}")
        if first.allocation_bytes > self.capacity:
            return
        single = self.predictor_of((first,))
        larger = [b for b in self.batches[1:]
                  if single.predict(self._every_remat(), b).device_bytes <= self.capacity]
        for batch in reversed(larger[-2:] if larger else self.batches[1:2]):
            if self._baseline_at(batch) is not None:
                break

    def _baseline_at(self, batch: int) -> Baseline | None:
        """Compile `full` at `batch`; every compiled `full` is a baseline of the predictor."""
        size, folder = self._compile([BASELINE], batch)[BASELINE][:2]
        return self._add_baseline(size, folder, batch)

    def _add_baseline(self, size: int | None, folder: str | None,
                      batch: int) -> Baseline | None:
        """`full` compiled at `batch` (size None: out of memory) as a baseline; where it does not
        fit, the larger batches are not searched."""
        if size is None or size > self.capacity:
            self._overflows_at(batch)
        if size is None:
            return None
        baseline = self.baseline_of(Path(folder or ""))
        self.baselines.append(baseline)
        return baseline

    def _overflows_at(self, batch: int) -> None:
        self._full_overflows = min(batch, self._full_overflows or batch)

    def _every_remat(self) -> str:
        return encode_named(dict.fromkeys(self.names, "remat"), self.names)

    def _predicted(self, batch: int, compiled: dict[str, Candidate]) -> dict[str, Candidate]:
        """Every candidate at `batch`, predicted from the baselines so far; those already
        compiled keep their compiled figures."""
        predictor = self.predictor_of(tuple(self.baselines))
        candidates = {p: Candidate(predictor.predict(p, batch)) for p in self.policies}
        for policy, done in compiled.items():
            mine = candidates[policy]
            mine.compiled_bytes, mine.compiled_ok, mine.folder, mine.held_bytes = \
                done.compiled_bytes, done.compiled_ok, done.folder, done.held_bytes
        full = candidates.get(self._every_remat())
        for baseline in self.baselines:
            if baseline_batch(baseline) == batch and full is not None:
                full.compiled_bytes = baseline.allocation_bytes
        for candidate in candidates.values():
            candidate.compiled_step_s = self.steps.get((candidate.prediction.policy, batch))
            order = self.orders.get((candidate.prediction.policy, batch))
            candidate.prediction = candidate.prediction.settled(order, "its compile")
        return candidates

    def _compiled_before(self, candidates: dict[str, Candidate], batch: int) -> None:
        for (policy, at), (size, folder, *step) in self.compiled_before.items():
            mine = candidates.get(policy)
            if at != batch or mine is None or mine.compiled_bytes is not None:
                continue
            mine.compiled_ok, mine.compiled_bytes = size is not None, size or 0
            mine.folder, mine.compiled_step_s = folder, step[0] if step else None
            if size:
                self.overestimate = max(self.overestimate,
                                        mine.prediction.device_bytes / size - 1)

    def _search(self, candidates: dict[str, Candidate], batch: int) -> Candidate | None:
        """Rounds of: the fastest candidate whose known bytes fit is the winner; compile it
        unless it was; where nothing is known to fit, compile `full` (the least any policy
        keeps); once per batch, also the one faster candidate within the predictor's largest
        overestimate above the capacity; and `full` where its step estimate ties with the
        winner's (module docstring, 2.)."""
        probed = False
        for _ in range(MAX_ROUNDS):
            self._settle_by_neighbours(candidates, batch)
            ranked = sorted(candidates.values(), key=_speed)
            compiled = [c for c in ranked if c.compiled_bytes is not None and c.compiled_ok]
            for candidate in ranked:
                candidate.calibrated_bytes = calibrated(candidate, compiled)
            winner = next((c for c in ranked if c.compiled_ok
                           and c.calibrated_bytes <= self.capacity), None)
            full = candidates[self._every_remat()]
            if winner is None:  # `full` first; if it does not fit, the nearest above it
                wanted = [full] if full.compiled_bytes is None else \
                    self._probe(ranked, compiled, None)
                if not wanted:
                    return None
            elif winner.compiled_bytes is None:
                wanted = [winner]
            elif not probed and (wanted := self._probe(ranked, compiled, winner)):
                probed = True
            elif full.compiled_bytes is None and _speed(full)[0] == _speed(winner)[0]:
                wanted = [full]  # a tie in the step estimate: the compiled programs decide
            else:
                return self._fastest_compiled_fit(candidates)
            self._compile_candidates(wanted, batch)
            if full in wanted and full.compiled_ok:
                candidates.update(self._baseline_from(full, candidates, batch))
        return self._fastest_compiled_fit(candidates)

    def _settle_by_neighbours(self, candidates: dict[str, Candidate], batch: int) -> None:
        """An uncompiled candidate whose loss order matters takes the order read from its
        nearest compiled neighbour at `batch` (fewest names chosen differently; a guess: libtpu
        picks per program, llama-1b / v5e:2x2 at per-device batch 2 ran one of three such
        programs before the loop, docs/frontier.md)."""
        read = [c for c in candidates.values() if (c.prediction.policy, batch) in self.orders]
        if not read:
            return
        for candidate in candidates.values():
            p = candidate.prediction
            if candidate.compiled_bytes is not None or not p.loss_order_undecided:
                continue
            nearest = min(read, key=lambda c: _distance(candidate, c))
            candidate.prediction = dataclasses.replace(p, loss_order=None).settled(
                self.orders[nearest.prediction.policy, batch],
                f"the compile of its nearest neighbour {nearest.prediction.policy}")

    def _fastest_compiled_fit(self, candidates: dict[str, Candidate]) -> Candidate | None:
        fits = [c for c in candidates.values() if c.compiled_bytes is not None
                and c.compiled_ok and c.compiled_bytes <= self.capacity]
        return _settled(min(fits, key=_speed), fits) if fits else None

    def _baseline_from(self, full: Candidate, candidates: dict[str, Candidate],
                       batch: int) -> dict[str, Candidate]:
        """`full` compiled in a round is a baseline too: predict this batch again with it."""
        self._add_baseline(full.compiled_bytes, full.folder, batch)
        done = {p: c for p, c in candidates.items() if c.compiled_bytes is not None}
        return self._predicted(batch, done)

    def _probe(self, ranked: list[Candidate], compiled: list[Candidate],
               winner: Candidate | None) -> list[Candidate]:
        """Of the uncompiled candidates strictly faster than the winner (by time, FLOPs and
        host bytes) that the winner's figure (`calibrated`, raised only) puts above the
        capacity, the one whose figure lowered by its nearest compiled neighbour's error is
        least, if within the predictor's largest overestimate so far: the one a prediction too
        high would wrongly exclude. The lowered figure may be under the capacity. Without a winner
        (`full` compiled and over the capacity) the same, however far above the capacity:
        keeping a name can lower XLA's allocation (XLA:CPU). Measured cases: see
        docs/frontier.md, 'The same benchmark on GPU targets' and 'What is measured'."""
        reach = self.capacity * (1 + self.overestimate) if winner is not None else float("inf")
        figures = {id(c): calibrated(c, compiled, lower=True) for c in ranked
                   if c.compiled_bytes is None}
        faster = [c for c in ranked if (winner is None or _speed(c)[:3] < _speed(winner)[:3])
                  and c.compiled_bytes is None and c.calibrated_bytes > self.capacity
                  and figures[id(c)] <= reach]
        return sorted(faster, key=lambda c: figures[id(c)])[:1]

    def _compile_candidates(self, wanted: list[Candidate], batch: int) -> None:
        built = self._compile([c.prediction.policy for c in wanted], batch)
        for candidate in wanted:
            size, folder = built[candidate.prediction.policy][:2]
            candidate.compiled_step_s = self.steps.get((candidate.prediction.policy, batch))
            candidate.held_bytes = None if candidate.prediction.loss_order_open else \
                candidate.prediction.allocation_for(candidate.calibrated_bytes
                                                    or candidate.prediction.device_bytes)
            candidate.compiled_ok = size is not None
            candidate.compiled_bytes = size if size is not None else 0
            candidate.folder = folder
            self._read_loss_order(candidate, batch)
            if size:
                self.overestimate = max(self.overestimate,
                                        candidate.prediction.device_bytes / size - 1)

    def _read_loss_order(self, candidate: Candidate, batch: int) -> None:
        """The loss order libtpu gave the compiled `candidate`, where it decides its
        allocation: its row then predicts that order's figure."""
        p = candidate.prediction
        if (self.loss_order_of is None or not candidate.compiled_bytes or not candidate.folder
                or not p.loss_order_undecided):
            return
        order = self.loss_order_of(candidate.folder)
        if order is not None:
            self.orders[p.policy, batch] = order
            candidate.prediction = dataclasses.replace(p, loss_order=None).settled(
                order, "its compile")

    def _compile(self, policies: list[str], batch: int) -> dict[str, tuple]:
        built, count = self.compile_batch(policies, batch)
        self.compiles += count
        for policy, figures in built.items():  # `full` is the candidate choosing remat for all
            key = self._every_remat() if policy == BASELINE else policy
            self.steps[key, batch] = figures[2] if len(figures) > 2 else None
        return built


def calibrated(candidate: Candidate, compiled: list[Candidate], lower: bool = False) -> int:
    """Compiled bytes when compiled; else the prediction plus the error (compiled - predicted)
    of the compiled candidate whose choices differ in the fewest names (the least error of
    those at equal distance), when that error is positive (or `lower`): a compile that shows
    the predictor low raises its neighbours, one that shows it high does not lower them where
    the search picks a winner, only where it picks the probe. libtpu fits a
    program whose schedule would exceed the HBM into it by rescheduling and rematerializing
    (docs/frontier.md, 'libtpu's memory-pressure rematerialization'; v5e against v5p figures
    under 'libtpu's loss order'), so a neighbour of such a program need not fit; the probe
    (`FrontierSearch._probe`) looks for those."""
    if candidate.compiled_bytes is not None:
        return candidate.compiled_bytes
    predicted = candidate.prediction.device_bytes
    if not compiled:
        return predicted
    nearest = min(_distance(candidate, c) for c in compiled)
    error = min(c.known_bytes - c.prediction.device_bytes for c in compiled
                if _distance(candidate, c) == nearest)
    return predicted + (error if lower else max(error, 0))


def _distance(candidate: Candidate, other: Candidate) -> int:
    """How many names the two candidates choose differently."""
    mine, theirs = candidate.prediction.choices, other.prediction.choices
    return sum(mine.get(n) != theirs.get(n) for n in set(mine) | set(theirs))


def _settled(winner: Candidate, fits: list[Candidate]) -> Candidate:
    """Among the compiled fits the step estimate ties with the winner (memory-bound programs
    tie whatever they recompute), the fastest by the compiled programs' own per-op step: libtpu
    fits a program predicted over the HBM by recomputing (llama-1b / v5e:2x2 at per-device
    batch 7: mlp_gate kept, 15.3 GiB compiled, 0.932 s against `full`'s 0.911 s), which the
    prediction cannot see."""
    tied = [c for c in fits if _speed(c)[0] == _speed(winner)[0]]
    return min(tied, key=lambda c: (c.compiled_step_s if c.compiled_step_s is not None
                                    else float("inf"), *_speed(c)[1:]))


def _speed(candidate: Candidate) -> tuple[float, int, int, int]:
    """Step (a compiled candidate's own per-op step, else the predicted one), then FLOPs, bytes
    moved to the host and device bytes."""
    p = candidate.prediction
    step = candidate.compiled_step_s if candidate.compiled_step_s is not None else \
        p.step_seconds
    return (step or 0.0, p.flops, p.host_bytes, p.device_bytes)


def frontier_names(config) -> tuple[str, ...]:
    """The block's names a policy chooses for (`mlp_out` is never a residual)."""
    return tuple(n for n in block_names(config) if n != "mlp_out")

