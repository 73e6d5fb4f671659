"""Measured time by phase, scope and layer, and the runs (steps) of a program in a trace.

**Splitting an op's time.** The flops analysis charges each FLOP to the instruction that does
it (`attribution.charges`: a fusion's work to its fused instructions, each with its own phase,
scope and layer). An event's self time is split among the charges of its instruction the same
way: in proportion to their FLOPs + transcendentals, else (an op that computes nothing, e.g. a
copy) to their bytes, else evenly. So time rows use the very keys of `hloscope flops`, and a
fusion that mixes forward and recompute work is split between them. An instruction without
charges (a `while`'s own bookkeeping) keeps its time under its own op_name's keys.

**Layers inside scans.** A scanned layer stack is one `while` whose body serves every layer
(`Charge.layers`: the layer loops' trip counts multiplied); its op_name names no layer. The
measured events tell the layers apart: the k-th event of a body instruction in one run on one
core is iteration k (an op that runs as several events, a memset and a kernel, counts its
events per execution as one), so its time goes to `layer_{k mod L}`, or `layer_{L-1-(k mod L)}`
where the work is the backward pass or its recomputation (JAX transposes a scan into one running in
reverse). This assumes the layer loop is the innermost loop around the op, as in JAX's
scanned stacks; where no layer count is known the time stays under `<while> (loop body)`.

**Runs.** The events of one execution of a program share a `run_id`; a run's wall time spans
its first event's start to its last event's end. Without run ids (some device traces) the
trace's step marks group the events, else the whole trace is one run. On a device trace with
several cores (`/device:TPU:0..3`) each core runs the whole program: the runs are those of one
core (the one with the most events, the first by name among equals), so a step's wall time is
one core's, while op time sums all cores. (libtpu numbers runs per core: one execution can
carry different `run_id`s on different cores.)
"""
from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from dataclasses import dataclass

from hloscope.analyses.cost.attribution import Charge
from hloscope.analyses.cost.flops import OUTSIDE_LAYERS, layer_key, scope_key
from hloscope.analyses.cost.phases import Phase, layer_of, phase_of
from hloscope.analyses.cost.remat import is_xla_clone
from hloscope.analyses.trace.join import JoinedEvent
from hloscope.model.instruction import Instruction
from hloscope.model.trace import StepMark

KEYS = ("phase", "scope", "layer")


@dataclass(frozen=True, slots=True)
class Share:
    """A part of an instruction's time: its keys and its fraction."""

    phase: str
    scope: str
    layer: str
    fraction: float
    recomputed: bool
    layers: int = 0  # the layers a scan body's op serves (0: not in a layer loop)
    reverse: bool = False  # backward or recompute work: iteration k is layer L-1-k


@dataclass(slots=True)
class Run:
    key: str
    events: list[JoinedEvent]

    @property
    def start_ps(self) -> int:
        return min(j.event.start_ps for j in self.events)

    @property
    def wall_ps(self) -> int:
        return max(j.event.end_ps for j in self.events) - self.start_ps


def instruction_shares(charges: list[Charge], scope_depth: int,
                       prefix: tuple[str, ...]) -> dict[int, list[Share]]:
    """id(top instruction) -> how its time splits (see the module docstring)."""
    by_top: dict[int, list[Charge]] = defaultdict(list)
    for charge in charges:
        by_top[id(charge.top)].append(charge)
    return {top: _shares(group, scope_depth, prefix) for top, group in by_top.items()}


def _shares(group: list[Charge], scope_depth: int, prefix: tuple[str, ...]) -> list[Share]:
    weights = [max(c.cost.flops + c.cost.transcendentals, 0) for c in group]
    if not sum(weights):
        weights = [max(c.cost.bytes_accessed, 0) for c in group]
    if not sum(weights):
        weights = [1] * len(group)
    total = sum(weights)
    return [Share(c.phase.value, scope_key(c.op_name, scope_depth, prefix), layer_key(c),
                  w / total, c.phase is Phase.RECOMPUTE or is_xla_clone(c.top.name),
                  c.layers if c.layer is None else 0,
                  c.phase in (Phase.BACKWARD, Phase.RECOMPUTE))
            for c, w in zip(group, weights, strict=True) if w]


def own_share(instruction: Instruction, scope_depth: int, prefix: tuple[str, ...]) -> Share:
    """The keys of an instruction without charges, from its own op_name."""
    op_name = instruction.op_name
    phase = phase_of(op_name) if op_name else None
    return Share((phase or Phase.OTHER).value, scope_key(op_name, scope_depth, prefix),
                 (layer_of(op_name) if op_name else None) or OUTSIDE_LAYERS, 1.0,
                 phase is Phase.RECOMPUTE or is_xla_clone(instruction.name))


def split_time(events: list[JoinedEvent], shares: dict[int, list[Share]], scope_depth: int,
               prefix: tuple[str, ...], executions: dict[str, int] | None = None,
               steps: list[StepMark] | None = None,
               ) -> tuple[dict[str, dict[str, float]], float]:
    """({key kind: {key: self ps}}, recomputed self ps) over `events`; `executions` (per run,
    by instruction) and `steps` number a scan's iterations (`iteration_numbers`)."""
    totals: dict[str, dict[str, float]] = {kind: defaultdict(float) for kind in KEYS}
    recomputed = 0.0
    iterations = iteration_numbers(events, executions or {}, steps or [])
    for joined in events:
        instruction = joined.matched_instruction
        parts = shares.get(id(instruction)) or [own_share(instruction, scope_depth, prefix)]
        for share in parts:
            time = joined.self_ps * share.fraction
            totals["phase"][share.phase] += time
            totals["scope"][share.scope] += time
            totals["layer"][scan_layer(share, iterations[id(joined)])] += time
            if share.recomputed:
                recomputed += time
    return {kind: dict(values) for kind, values in totals.items()}, recomputed


def iteration_numbers(events: list[JoinedEvent], executions: dict[str, int],
                      steps: list[StepMark]) -> dict[int, int]:
    """id(joined event) -> k: the event is in the k-th execution (from 0, by start) of its
    instruction in its program, run and core. A run is the events' `run_id`, else the step mark
    they start in (raw GPU traces have no run ids). An instruction with a whole number of events
    per execution (a fusion run as a memset and a kernel) counts that many as one execution."""
    grouped: dict[tuple, list[JoinedEvent]] = defaultdict(list)
    starts = [mark.start_ps for mark in steps]
    for joined in events:
        event = joined.event
        run = event.run_id if event.run_id is not None else \
            bisect.bisect_right(starts, event.start_ps)
        name = joined.matched_instruction.name
        grouped[(id(joined.program), run, event.plane, name)].append(joined)
    numbers = {}
    for (_, _, _, name), group in grouped.items():
        expected = executions.get(name, 0)
        per = len(group) // expected if expected and len(group) % expected == 0 else 1
        for number, joined in enumerate(sorted(group, key=lambda j: j.event.start_ps)):
            numbers[id(joined)] = number // max(per, 1)
    return numbers


def scan_layer(share: Share, iteration: int) -> str:
    """The layer key of a share's time at `iteration` (see the module docstring)."""
    if not share.layers:
        return share.layer
    index = iteration % share.layers
    return f"layer_{share.layers - 1 - index if share.reverse else index}"


def event_labels(events: list[JoinedEvent], shares: dict[int, list[Share]], scope_depth: int,
                 prefix: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """Instruction name -> (scope, phase) of its largest share: how a timeline labels it."""
    labels = {}
    for joined in events:
        instruction = joined.matched_instruction
        if instruction.name not in labels:
            parts = shares.get(id(instruction)) or [own_share(instruction, scope_depth, prefix)]
            largest = max(parts, key=lambda share: share.fraction)
            labels[instruction.name] = (largest.scope, largest.phase)
    return labels


def group_runs(events: list[JoinedEvent], steps: list[StepMark]) -> list[Run]:
    """The runs of a program (see the module docstring), in time order."""
    events = one_core(events)
    if events and all(j.event.run_id is not None for j in events):
        by_run: dict[int | None, list[JoinedEvent]] = defaultdict(list)
        for joined in events:
            by_run[joined.event.run_id].append(joined)
        runs = [Run(str(key), group) for key, group in by_run.items()]
    elif steps:
        runs = [Run(f"step {s.number}", [j for j in events if s.start_ps <= j.event.start_ps
                                         < s.start_ps + s.duration_ps]) for s in steps]
        runs = [run for run in runs if run.events]
    else:
        runs = [Run("trace", events)] if events else []
    return sorted(runs, key=lambda run: run.start_ps)


def one_core(events: list[JoinedEvent]) -> list[JoinedEvent]:
    """The events of one core where a device trace's events are on several (see the module
    docstring); all of them otherwise."""
    planes = Counter(j.event.plane for j in events if j.event.plane.startswith("/device:"))
    if len(planes) <= 1:
        return events
    most = max(planes.values())
    chosen = min(plane for plane, count in planes.items() if count == most)
    return [j for j in events if j.event.plane == chosen]
