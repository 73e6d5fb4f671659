"""Predict a per-tensor policy's device allocation, host bytes, FLOPs and step time from
compiled `full` baselines and the config, without compiling it.

The device bytes are the baselines' allocation scaled with the tokens, plus each kept name's L
layers (its closed-form bytes, `configs/tensors.py`) less the headroom `full` leaves above its layer
loops, plus what offloaded names hold on the device, and under micro-batches a gradient
accumulator and the whole model state. On TPU, where that need exceeds libtpu's
rematerialization limit, the allocation is where libtpu's recompute lands. FLOPs are the
baseline's per token less the recompute the kept names save; the step time is the roofline's.
Every figure is a sum of `Term`s, so a prediction explains itself ("+2 layers × 8 MiB
mlp_hidden kept"). The formula term by term: docs/predict.md; the constants fitted to libtpu:
`hloscope.calibration.tpu` (docs/calibration.md).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hloscope.analyses.oom.analytic import parameters_per_device, state_bytes_per_parameter
from hloscope.analyses.oom.remedies import ACCUMULATOR_BYTES
from hloscope.analyses.predict.baseline import (
    REMAT_PERCENT_FLAG,
    Baseline,
    baseline_tokens,
    layer_span_headroom,
    mesh_ways,
    peak_above_backward_loop,
    peak_above_outside,
)
from hloscope.analyses.predict.flops import recompute_flops_per_token
from hloscope.analyses.predict.loss_order import AFTER
from hloscope.analyses.predict.scaled_step import PredictedStep, StepChange, predicted_step
from hloscope.analyses.roofline import estimate_step
from hloscope.calibration import tpu as tpu_calibration
from hloscope.configs.config import TransformerConfig, param_count
from hloscope.configs.targets import parse_target
from hloscope.configs.tensors import (
    DTYPE_BYTES,
    NAMED_PREFIX,
    block_names,
    block_tensors,
    decode_named,
    tensor_bytes,
    tokens_per_device,
)
from hloscope.errors import UsageError
from hloscope.units import format_bytes

_Knot = TypeVar("_Knot")

INPUT_BYTES_PER_TOKEN = 8
"""Token ids and targets, int32 each (workloads/transformer.py's batch)."""
# libtpu's behaviour, fitted on committed compiles: each figure's source and test in
# hloscope/calibration/tpu.py, how it was measured in docs/calibration.md
OFFLOAD_DEVICE_COPIES = tpu_calibration.OFFLOAD_DEVICE_COPIES.value
OFFLOAD_FETCHED_LAYERS = tpu_calibration.OFFLOAD_FETCHED_LAYERS.value
LOSS_IN_SPAN_BYTES = int(tpu_calibration.LOSS_IN_SPAN_BYTES.value)
XLA_TPU_REMAT_PERCENT = int(tpu_calibration.REMAT_PERCENT.value)
SQUEEZE_LANDING = tpu_calibration.SQUEEZE_LANDING.value
DEFERRED_MARGIN = tpu_calibration.DEFERRED_MARGIN.value

LOSS_ORDER_NOTE = "libtpu's memory scheduler may run the loss before the backward loop or after it"
LOSS_ORDER_TOLERANCE = 0.05
"""The predictor's target: where the two loss orders' allocations differ by more than this
fraction of the lesser, halfway between them is no prediction (up to 0.62 GiB either way on
llama-1b / v5e:2x2 at per-device batch 3, docs/frontier.md) and the order must be known."""
"""`Prediction.explain`'s line for a program whose loss order the baselines do not decide
(`Predictor._loss_orders`)."""

ON_CHIP_LOGITS_BYTES = 128 * 2**20
"""f32 logits of at most this many bytes per device need not take HBM: libtpu can keep them in
the core's VMEM (v5e's 128 MiB), so its loss order does not move the allocation. tiny /
v5e:2x2 (4 scanned layers, attn_out kept): its f32[2,2048,512] logits (8 MiB) are in memory
space 1 in the buffer assignment, and the after-tight figure (`Predictor._loss_orders`) was
5.8% under XLA's allocation at seq 1024 where the need is 3.5% over
(benchmarks/results/frontier_accuracy.txt); llama-1b's are 1 GiB per sequence of 2048."""

RECOMPUTED_LOGITS = "tokens × the logits matmul libtpu recomputes after the backward loop"
"""The FLOP term of `Predictor._libtpu_recompute_terms` (its name, which `explain` looks for)."""

OFFLOAD_HBM_PASSES = 2
"""HBM traffic of an offloaded byte: read once when it goes to the host in the forward pass,
written once when it comes back in the backward. A lower bound: XLA's own cost analysis of the
compiled program charges more (its async-done of the dynamic-update-slice into the stacked host
buffer is charged the whole buffer each layer, the default bytes of an op XLA's
HloCostAnalysis::HandleAsyncDone leaves unset: llama-1b / v5e:2x2, mlp_gate offloaded at
per-device batch 3, +43 GiB of bytes accessed for 1.5 GiB offloaded). Either way an offloaded
name costs HBM time that keeping it on the device does not, so at equal FLOPs the search
prefers the device, then the fewest bytes offloaded."""


@dataclass(frozen=True)
class Term:
    """One addend: `count` × `unit` bytes (or FLOPs) of `what`."""

    what: str
    count: float
    unit: float

    @property
    def value(self) -> int:
        return round(self.count * self.unit)

    def explain(self, bytes_: bool = True) -> str:
        unit = format_bytes(round(abs(self.unit))) if bytes_ else f"{abs(self.unit):.3g}"
        sign = "-" if self.count * self.unit < 0 else "+"
        return f"{sign}{abs(self.count):g} × {unit} {self.what}"

    def to_dict(self) -> dict:
        return {"what": self.what, "count": self.count, "unit": self.unit, "value": self.value}


@dataclass(frozen=True)
class Prediction:
    policy: str
    batch: int
    micro_batches: int
    device_terms: list[Term]
    host_terms: list[Term]
    flop_terms: list[Term]
    step_seconds: float | None
    tokens: int  # tokens per step (the global batch × sequence)
    choices: dict[str, str] = field(default_factory=dict)
    remat_limit_bytes: int | None = None  # libtpu's rematerialization limit (TPU only)
    remat_percent: int = XLA_TPU_REMAT_PERCENT  # of the usable HBM, the limit's percent
    first_cut_bytes: int = 0  # what libtpu recomputes first (`deferred_landing`)
    deferred_cut_bytes: int = 0  # then: the baseline's deferred bytes less that (0: none)
    outside_floor_bytes: int = 0  # `full`'s allocation less its peak above its outside peak
    loss_after_tight_bytes: int = 0  # the loss after the backward loop, packed tight (0: n/a)
    step: PredictedStep | None = None  # step_seconds' parts (None: the roofline's figure)
    loss_before_bytes: int = 0  # the loss before the backward loop, the stacks live (0: n/a)
    loss_order: str | None = None  # the order a compile showed (`settled`; None: not known)
    loss_order_source: str = ""  # which compile showed it

    @property
    def device_bytes(self) -> int:
        """What the program needs on the device (its schedule's allocation unconstrained)."""
        return sum(term.value for term in self.device_terms)

    @property
    def squeezed(self) -> bool:
        """The need exceeds libtpu's rematerialization limit: XLA recomputes to get under it."""
        return self.remat_limit_bytes is not None and self.device_bytes > self.remat_limit_bytes

    @property
    def allocation_bytes(self) -> int:
        """What XLA is predicted to allocate: the need, or where libtpu rematerializes, where
        its allocation lands (SQUEEZE_LANDING × the limit)."""
        return self.allocation_for(self.device_bytes)

    @property
    def loss_order_undecided(self) -> bool:
        """Where the loss runs, before or after the backward loop, changes this program's
        allocation and the baselines do not say which libtpu picks (`Predictor._loss_orders`)."""
        return bool(self.loss_after_tight_bytes and self.loss_before_bytes)

    @property
    def loss_order_open(self) -> bool:
        """The loss order is undecided, the two orders' allocations differ by more than
        LOSS_ORDER_TOLERANCE, and no compile has shown which libtpu runs: the allocation is
        not predicted (`allocation_bytes` is then halfway, ± half the difference)."""
        return (self.loss_order_undecided and self.loss_order is None
                and not self.squeezed and self.loss_order_gap(self.device_bytes) > 0)

    def loss_order_gap(self, need: int) -> float:
        """How far the two orders' allocations differ beyond LOSS_ORDER_TOLERANCE, as a
        fraction of the lesser (0: within it, or decided)."""
        if not self.loss_order_undecided:
            return 0.0
        after, before = self.loss_order_allocations(need)
        return max(0.0, abs(before - after) / max(1, min(after, before)) - LOSS_ORDER_TOLERANCE)

    def settled(self, order: str | None, source: str) -> Prediction:
        """This prediction with libtpu's loss order known (`loss_order.AFTER` or `BEFORE`, read
        from `source`, a compile); itself where the order is not undecided or not known."""
        if not self.loss_order_undecided or order is None:
            return self
        return dataclasses.replace(self, loss_order=order, loss_order_source=source)

    def allocation_for(self, need: int) -> int:
        """The allocation of a program of this target that needs `need` bytes (the frontier
        search's figure raised by a compiled neighbour's error, say)."""
        limit = self.remat_limit_bytes
        if self.loss_order_undecided and (not limit or need <= limit):
            after, before = self.loss_order_allocations(need)
            if self.loss_order is not None:
                return after if self.loss_order == AFTER else before
            return self._between_loss_orders(need)
        if limit is None or need <= limit or limit == 0:
            return need  # a 0% limit: libtpu recomputes what it can, how much is not predicted
        landing = self.deferred_landing(need)
        return landing if landing is not None else min(need, round(SQUEEZE_LANDING * limit))

    def loss_order_allocations(self, need: int) -> tuple[int, int]:
        """(after, before): the allocation of a program needing `need` bytes with its loss run
        after the backward loop (the f32 logits in the space the stacks free, no packing above
        the live peak) and before it (the stacks live; where that is over libtpu's limit, where
        its recompute lands), each moved by `need` less the prediction's own need."""
        shift = need - self.device_bytes
        after, before = self.loss_after_tight_bytes + shift, self.loss_before_bytes + shift
        limit = self.remat_limit_bytes
        if limit and before > limit:
            before = min(before, round(SQUEEZE_LANDING * limit))
        return after, before

    def undecided_loss_orders(self) -> list[int] | None:
        """[after, before] at this prediction's need where the order is undecided, else None."""
        if not self.loss_order_undecided:
            return None
        return list(self.loss_order_allocations(self.device_bytes))

    def _between_loss_orders(self, need: int) -> int:
        """Halfway between the two orders' allocations: the least worst error whichever libtpu
        picks."""
        after, before = self.loss_order_allocations(need)
        return round((after + before) / 2)

    def deferred_landing(self, need: int) -> int | None:
        """Where a program needing `need` lands once libtpu recomputes what it holds through the
        backward loop; None where it does not come to that (no deferred bytes, or the first cut
        is enough) or that does not get it under the limit. libtpu first recomputes the gathered
        embedding table (`first_cut_bytes`), then the logits it holds through the backward loop
        (`deferred_cut_bytes`); the peak is then `full`'s outside the loops, or its span less
        that cut plus the kept stacks, whichever is higher (docs/predict.md, "What libtpu
        recomputes first")."""
        limit = self.remat_limit_bytes
        if (not limit or self.deferred_cut_bytes <= 0
                or need - limit <= self.first_cut_bytes + DEFERRED_MARGIN * limit):
            return None
        landing = max(need - self.deferred_cut_bytes, self.outside_floor_bytes)
        return landing if landing <= limit else None

    @property
    def host_bytes(self) -> int:
        return sum(term.value for term in self.host_terms)

    @property
    def flops(self) -> int:
        return sum(term.value for term in self.flop_terms)

    @property
    def tokens_per_second(self) -> float | None:
        return self.tokens / self.step_seconds if self.step_seconds else None

    def explain(self) -> list[str]:
        lines = [term.explain() for term in self.device_terms]
        if self.loss_order_undecided and not self.squeezed:
            return lines + [self._explain_loss_order()]
        if not self.squeezed:
            return lines
        landing = (f"allocation predicted at {SQUEEZE_LANDING:g} × the limit, "
                   f"{format_bytes(self.allocation_bytes)}" if self.remat_limit_bytes else
                   "how far it gets is not predicted (allocation: the need)")
        if self.deferred_landing(self.device_bytes) is not None:
            landing = (f"more than the gathered table ({format_bytes(self.first_cut_bytes)}) "
                       f"and a margin over, it recomputes what it holds through the backward loop "
                       f"(-{format_bytes(self.deferred_cut_bytes)}, not below `full`'s peak "
                       f"outside the loops, {format_bytes(self.outside_floor_bytes)}): "
                       f"allocation predicted at {format_bytes(self.allocation_bytes)}")
        cost = ("the logits matmul it runs again is in the FLOPs and step time"
                if any(t.what.startswith(RECOMPUTED_LOGITS) for t in self.flop_terms)
                else "at an unpredicted cost in step time")
        return lines + [f"= {format_bytes(self.device_bytes)} needed, over libtpu's "
                        f"rematerialization limit {format_bytes(self.remat_limit_bytes or 0)} "
                        f"({self.remat_percent}% of the usable HBM less unaliased arguments "
                        f"and the program): XLA recomputes to get under it; {landing}; {cost}"]

    def _explain_loss_order(self) -> str:
        after, before = self.loss_order_allocations(self.device_bytes)
        orders = (f"= {format_bytes(self.device_bytes)} needed; {LOSS_ORDER_NOTE}: before, "
                  f"{format_bytes(before)} (every stack and the gathered table live at the "
                  f"loss, or the layer loops' peak); after, {format_bytes(after)} (the f32 logits "
                  f"in the stacks' freed space)")
        if self.loss_order is not None:
            return (f"{orders}; {self.loss_order}, as {self.loss_order_source} showed: "
                    f"allocation predicted {format_bytes(self.allocation_bytes)}")
        half = format_bytes(abs(before - after) // 2)
        if self.loss_order_open:
            return (f"{orders}; they differ by more than {LOSS_ORDER_TOLERANCE:.0%} and no "
                    f"compile has shown which: allocation not predicted (halfway, "
                    f"{format_bytes(self.allocation_bytes)} ± {half})")
        return (f"{orders}; within {LOSS_ORDER_TOLERANCE:.0%} of each other: allocation "
                f"predicted halfway, {format_bytes(self.allocation_bytes)} ± {half}")

    def to_dict(self) -> dict:
        return {"policy": self.policy, "batch": self.batch, "micro_batches": self.micro_batches,
                "choices": self.choices, "device_bytes": self.device_bytes,
                "allocation_bytes": self.allocation_bytes, "squeezed": self.squeezed,
                "remat_limit_bytes": self.remat_limit_bytes,
                "deferred_cut_bytes": self.deferred_cut_bytes,
                "loss_order_allocations": self.undecided_loss_orders(),
                "loss_order": self.loss_order, "loss_order_open": self.loss_order_open,
                "host_bytes": self.host_bytes, "flops": self.flops,
                "step_seconds": self.step_seconds, "tokens_per_second": self.tokens_per_second,
                "step": None if self.step is None else self.step.to_dict(),
                "device_terms": [t.to_dict() for t in self.device_terms],
                "host_terms": [t.to_dict() for t in self.host_terms],
                "flop_terms": [t.to_dict() for t in self.flop_terms],
                "explain": self.explain()}


@dataclass(frozen=True)
class Predictor:
    """Predictions from one or more `full` baselines of the same model and target."""

    baselines: tuple[Baseline, ...]

    def __post_init__(self) -> None:
        if not self.baselines:
            raise UsageError("the predictor needs a compiled `full` baseline")
        first = self.baselines[0]
        if any(b.target != first.target for b in self.baselines):
            raise UsageError("the baselines are compiled for different targets")
        if any(b.remat_percent != first.remat_percent for b in self.baselines):
            raise UsageError(f"the baselines are compiled with different {REMAT_PERCENT_FLAG}")

    @property
    def base(self) -> Baseline:
        return self.baselines[0]

    def predict(self, policy: str, batch: int, micro_batches: int = 1) -> Prediction:
        config = dataclasses.replace(self.base.transformer, batch=batch,
                                     micro_batches=micro_batches, remat=policy)
        names = _kept_names(config)
        choices = decode_named(policy, names) if policy.startswith(NAMED_PREFIX) else \
            dict.fromkeys(names, "remat")
        ways = mesh_ways(config, self.base.parsed_target)
        tokens = tokens_per_device(config, ways.batch)
        per_name = {t.name: tensor_bytes(t, config, ways.batch, ways.tensor)
                    for t in block_tensors(config) if t.name in names}
        kept = kept_terms(config.n_layers, choices, per_name)
        device = self._scaling_terms(tokens) + kept
        if micro_batches == 1:  # an accumulation loop reschedules the step: not measured
            device += self._headroom_terms(choices, kept, tokens)
        device += self._offload_terms(config, choices, per_name, tokens, micro_batches)
        device += self._accumulator(config, micro_batches, tokens)
        host = [Term(f"layers × {name} offloaded", config.n_layers, per_name[name])
                for name, choice in choices.items() if choice == "offload"]
        flop_terms = self._flop_terms(config, choices, ways.tensor, ways.batch)
        limit = self._remat_limit()
        cuts = self._deferred_cuts(config, choices, tokens, ways.tensor)
        orders = self._loss_orders(config, choices, per_name, tokens, ways.tensor,
                                   _total(device), cuts) if limit is not None else {}
        prediction = Prediction(policy, batch, micro_batches, device, host, flop_terms, None,
                                batch * config.seq_len, choices, limit, self._remat_percent(),
                                **cuts, **orders)
        recompute = self._libtpu_recompute_terms(config, prediction, tokens, ways.tensor)
        if recompute:
            prediction = dataclasses.replace(prediction, flop_terms=flop_terms + recompute)
        return self._with_step(prediction, self._step_scale(config, ways.batch),
                               config.compute_dtype, config.n_layers * micro_batches, per_name)

    def _remat_limit(self) -> int | None:
        """libtpu's rematerialization limit for the baseline's program (XLA_TPU_REMAT_PERCENT,
        or the percent the baseline's build gave it); None off TPU."""
        target = parse_target(self.base.target)
        usable = target.device.usable_memory_bytes
        if target.backend != "tpu" or usable is None:
            return None
        return max(0, usable * self._remat_percent() // 100
                   - self.base.unaliased_argument_bytes - self.base.program_bytes)

    def _deferred_cuts(self, config: TransformerConfig, choices: dict[str, str], tokens: int,
                       tensor_ways: int) -> dict[str, Any]:
        """`Prediction.deferred_landing`'s figures at `tokens`, where the baselines measured what
        they hold through the backward loop and `tokens` is within their range (beyond it `full`'s
        allocation, the floor, is extrapolated: libtpu's landing is not predicted from that);
        not with a name offloaded (libtpu then runs the loss inside the loops) or an
        accumulation loop (neither measured)."""
        cut = self._held_beyond_table(config, tokens, tensor_ways)
        if ("offload" in choices.values() or cut is None
                or tokens > max(baseline_tokens(b) for b in self.baselines)):
            return {}
        full = _total(self._scaling_terms(tokens))
        return {"first_cut_bytes": cut[0], "deferred_cut_bytes": cut[1],
                "outside_floor_bytes": full - self._interpolated(tokens, peak_above_outside)}

    def _loss_orders(self, config: TransformerConfig, choices: dict[str, str],
                     per_name: dict[str, int], tokens: int, tensor_ways: int, need: int,
                     cuts: dict[str, Any]) -> dict[str, Any]:
        """Both of the loss orders' allocations where the baselines cannot tell which libtpu
        picks (`Prediction.loss_order_allocations`): on TPU, names kept on the device only, where
        `full` holds the logits through its backward loop (`cuts`, `_deferred_cuts`' figures:
        none offloaded, within the baselines' range) and the forward loop's stacks (layer
        inputs and kept names) are at least the f32 logits [tokens, vocab].

        libtpu's memory scheduler picks the order of least memory by its own estimates (`Chose
        min-memory … sequence` in its log: `list`, `dfs` or `post_order`). Run after the
        backward loop, the loss's f32 logits are placed in the space the stacks free, at the
        heap's bottom, and the program allocates its live peak: `full`'s packing above its own
        (the f32 logits on top of the bf16 ones it holds) is gone. Run before it, the loss holds
        `full`'s peak outside the loops plus every stack and the gathered embedding table, with
        no packing, or the layer loops' own peak (`full`'s inside them plus the kept stacks)
        where that is higher. Not where the f32 logits are at most ON_CHIP_LOGITS_BYTES: they
        need not take HBM, and the order does not move the allocation.
        Measured on llama-1b / v5e:2x2: see docs/frontier.md, 'libtpu's loss order: before or
        after the backward loop'."""
        stacks = config.n_layers * (per_name["norm1"] + sum(
            per_name[name] for name, choice in choices.items() if choice == "device"))
        logits = tokens * config.vocab * 4 // tensor_ways
        if (not cuts or "device" not in choices.values() or logits <= ON_CHIP_LOGITS_BYTES
                or stacks < logits
                or not all(b.live_peak_bytes for b in self.baselines)):
            return {}
        moment = self._interpolated(tokens, _outside_peak) + stacks + cuts["first_cut_bytes"]
        loops = (self._interpolated(tokens, _span_peak)
                 + _total(kept_terms(config.n_layers, choices, per_name)))
        return {"loss_after_tight_bytes": need - self._interpolated(tokens, _packing),
                "loss_before_bytes": max(moment, loops)}

    def _held_beyond_table(self, config: TransformerConfig, tokens: int,
                           tensor_ways: int) -> tuple[int, int] | None:
        """(the gathered table, what the baselines hold through the backward loop beyond it)
        at `tokens`; None where that is not measured (unscanned layers, an accumulation loop,
        older baselines) or not beyond the table."""
        if (config.micro_batches > 1 or not self._spans_measured()
                or not all(b.deferred_bytes for b in self.baselines)):
            return None
        table = _gathered_table_bytes(config, tensor_ways)
        beyond = self._interpolated(tokens, _deferred) - table
        return (table, beyond) if beyond > 0 else None

    def _libtpu_recompute_terms(self, config: TransformerConfig, prediction: Prediction,
                                tokens: int, tensor_ways: int) -> list[Term]:
        """The logits matmul libtpu runs again after the backward loop where its
        rematerialization goes past the gathered table (`Prediction.deferred_landing`),
        offloaded names or not (docs/predict.md, "What libtpu recomputes first")."""
        limit = prediction.remat_limit_bytes
        cut = self._held_beyond_table(config, tokens, tensor_ways)
        if not limit or cut is None or prediction.device_bytes - limit <= cut[0]:
            return []
        return [Term(f"{RECOMPUTED_LOGITS} (2 × d_model × vocab)", tokens,
                     2 * config.d_model * config.vocab / tensor_ways)]

    def _remat_percent(self) -> int:
        percent = self.base.remat_percent
        return XLA_TPU_REMAT_PERCENT if percent is None else percent

    def _scaling_terms(self, tokens: int) -> list[Term]:
        """`full` at `tokens`: scaled from the smallest baseline below it (or with one
        baseline), else on the line through the two compiled `full`s around it (the two
        largest above the largest): XLA's allocation of `full` is not linear in the batch
        (llama-1b / v5e:2x2, seq 2048: +1.52 GiB per sequence over 1-4, +1.20 over 4-6, +1.50
        over 6-7), so each compiled `full` is a knot of a piecewise-linear fit."""
        knots = sorted({baseline_tokens(b): b for b in self.baselines}.items())
        segment = _segment(knots, tokens)
        if segment is None:
            t0, base = knots[0]
            fixed = base.fixed_bytes
            slope = (base.allocation_bytes - fixed) / t0
            source = "live at the baseline's peak"
        else:
            (low, lower), (high, upper) = segment
            slope = (upper.allocation_bytes - lower.allocation_bytes) / (high - low)
            fixed = round(lower.allocation_bytes - slope * low)
            source = f"line through the `full` baselines at {low} and {high} tokens"
        return [Term(f"model state ({source})", 1, fixed),
                Term("tokens × full remat's bytes per token (layer inputs, temporaries)",
                     tokens, slope)]

    def _headroom_terms(self, choices: dict[str, str], kept: list[Term],
                        tokens: int) -> list[Term]:
        """The kept stacks that fit under `full`'s peak outside its layer loops. Not where a
        name is offloaded: libtpu then runs the loss's logits before the backward layer loop,
        where the stacks are live (llama-1b / v5e:2x2, seq 2048, per-device batches 3 and 6,
        six offload policies: each program's peak inside the span, its peak after the backward
        loop 5.7-7.4 GiB against `full`'s 8.5 and 12.9)."""
        if "offload" in choices.values():
            return []
        added, headroom = _total(kept), self._span_headroom(tokens)
        if added <= 0 or headroom <= 0:
            return []
        return [Term("of the kept stacks under `full`'s peak outside its layer loops", -1,
                     min(added, headroom))]

    def _span_headroom(self, tokens: int) -> int:
        """`full`'s live peak above its layer span's (`layer_span_headroom`) at `tokens`; 0
        where a baseline did not measure it."""
        if not self._spans_measured():
            return 0
        return self._interpolated(tokens, layer_span_headroom)

    def _spans_measured(self) -> bool:
        return all(b.layer_span_peak_bytes and b.outside_span_peak_bytes
                   for b in self.baselines)

    def _interpolated(self, tokens: int, figure: Callable[[Baseline], int]) -> int:
        """A baseline figure at `tokens`, on the allocation's piecewise-linear fit (in
        proportion to the tokens below the smallest baseline or with one), at least 0."""
        knots = sorted({baseline_tokens(b): figure(b) for b in self.baselines}.items())
        segment = _segment(knots, tokens)
        if segment is None:
            t0, value = knots[0]
            return max(0, round(value * tokens / t0))
        (low, lower), (high, upper) = segment
        return max(0, round(lower + (upper - lower) * (tokens - low) / (high - low)))

    def _offload_terms(self, config: TransformerConfig, choices: dict[str, str],
                       per_name: dict[str, int], tokens: int, micro_batches: int) -> list[Term]:
        """What offloading costs on the device. With the baselines' layer spans measured (and
        no accumulation loop), the larger of two moments: the backward loop, which holds one
        layer of each offloaded name fetched back (OFFLOAD_FETCHED_LAYERS); and the loss,
        which libtpu then runs inside the layer loops, where the scan's stack of layer inputs
        and every layer of the kept names are live over `full`'s peak outside the loops
        (LOSS_IN_SPAN_BYTES). Otherwise OFFLOAD_DEVICE_COPIES layers of each."""
        offloaded = [name for name, choice in choices.items() if choice == "offload"]
        if not offloaded:
            return []
        if micro_batches > 1 or not self._spans_measured():
            return [Term(f"× {name} offloaded (staging on the device, measured)",
                         OFFLOAD_DEVICE_COPIES, per_name[name]) for name in offloaded]
        fetched = [Term(f"layer × {name} offloaded, fetched back in the backward loop",
                        OFFLOAD_FETCHED_LAYERS, per_name[name]) for name in offloaded]
        fetched += self._backward_loop_slack(_total(fetched),
                                             _total(kept_terms(config.n_layers, choices, per_name)),
                                             tokens)
        loss = [Term("layers × the scan's layer inputs, live at the loss, which runs inside the "
                     "layer loops once a name is offloaded", config.n_layers,
                     per_name["norm1"]),  # the norm's output has the layer input's [b, s, h]
                *[Term(f"layer × {name} kept, all layers live at the loss", 1, per_name[name])
                  for name, choice in choices.items() if choice == "device"],
                Term("the loss inside the layer loops, beyond those (measured)", 1,
                     LOSS_IN_SPAN_BYTES),
                Term("`full`'s peak above its peak outside the layer loops", -1,
                     self._interpolated(tokens, peak_above_outside))]
        return loss if _total(loss) > _total(fetched) else fetched

    def _backward_loop_slack(self, fetched: int, kept: int, tokens: int) -> list[Term]:
        """The fetched layers under `full`'s peak above its backward loop's, off TPU and where
        the baselines measured it: they live in that loop only, so they raise the program's
        peak by what exceeds that headroom (less what the kept stacks, `kept` bytes, took of
        it: `_headroom_terms`). Not on TPU, where libtpu runs the loss inside the layer loops
        once a name is offloaded (docs/predict.md, "Offloaded names: the fetched layers")."""
        if (parse_target(self.base.target).backend == "tpu"
                or not all(b.backward_loop_peak_bytes for b in self.baselines)):
            return []
        slack = (self._interpolated(tokens, peak_above_backward_loop)
                 - min(kept, self._span_headroom(tokens)))
        if slack <= 0 or fetched <= 0:
            return []
        return [Term("of the fetched layers under `full`'s peak above its backward loop", -1,
                     min(fetched, slack))]

    def _accumulator(self, config: TransformerConfig, micro_batches: int,
                     tokens: int) -> list[Term]:
        """What gradient accumulation adds to a baseline compiled without it."""
        if micro_batches <= 1 or any(b.transformer.micro_batches > 1 for b in self.baselines):
            return []
        target = parse_target(self.base.target)
        params = parameters_per_device(config, param_count(config), target.num_devices,
                                       target.num_slices)
        state = state_bytes_per_parameter(config)
        unheld = (state.parameter + state.optimizer) * params - self.base.fixed_bytes
        terms = [Term("parameters × fp32 gradient accumulator", params, ACCUMULATOR_BYTES)]
        if unheld > 0:
            terms.append(Term("model state the baseline's peak did not hold, held through the "
                              "accumulation loop", 1, unheld))
        return terms + [Term("tokens × token ids and targets of the other micro-batches, and "
                             "the scan's copy of all", tokens * (2 * micro_batches - 1),
                             INPUT_BYTES_PER_TOKEN)]

    def _flop_terms(self, config: TransformerConfig, choices: dict[str, str], tensor_ways: int,
                    batch_ways: int) -> list[Term]:
        base = self.base
        base_config = base.transformer
        step_tokens = tokens_per_device(config, batch_ways) * config.micro_batches
        base_tokens = baseline_tokens(base) * base_config.micro_batches
        kept = {name for name, choice in choices.items() if choice != "remat"}
        saved = (recompute_flops_per_token(config, set(), tensor_ways)
                 - recompute_flops_per_token(config, kept, tensor_ways))
        terms = [Term("tokens × the baseline's FLOPs per token", step_tokens,
                      base.flops / base_tokens)]
        if saved:
            terms.append(Term("layers × tokens × recompute FLOPs per token the kept names save",
                              config.n_layers * step_tokens, -saved))
        return terms

    def _with_step(self, prediction: Prediction, scale: float, compute_dtype: str, layers: int,
                   per_name: dict[str, int], added_hbm_bytes: float = 0.0) -> Prediction:
        """`prediction` with its step: the baseline's per-op step scaled to it (`scaled_step`,
        `scale` the tokens over the baseline's, `layers` the layer runs of the step); the
        roofline's where the baseline has none (no calibration for its device)."""
        base = self.base
        if base.step is None:
            return dataclasses.replace(prediction, step_seconds=self._roofline(
                prediction, scale, compute_dtype, added_hbm_bytes))
        choices = prediction.choices
        kept = sum(per_name[n] for n, choice in choices.items() if choice != "remat")
        moved = sum(per_name[n] for n, choice in choices.items() if choice == "offload")
        change = StepChange(scale, prediction.flops - base.flops * scale, layers * kept,
                            layers * moved)
        step = predicted_step(base.step, base.parsed_target.device, compute_dtype, change)
        return dataclasses.replace(prediction, step_seconds=None if step is None else step.seconds,
                                   step=step)

    def _step_scale(self, config: TransformerConfig, batch_ways: int) -> float:
        base = self.base
        return (tokens_per_device(config, batch_ways) * config.micro_batches
                / (baseline_tokens(base) * base.transformer.micro_batches))

    def _roofline(self, prediction: Prediction, scale: float, compute_dtype: str,
                  added_hbm_bytes: float = 0.0) -> float | None:
        """The roofline step of `prediction`, the baseline's HBM bytes scaled by `scale` (the
        step's tokens over the baseline's) plus the offloaded bytes' traffic and
        `added_hbm_bytes` (a user step's kept names, measured)."""
        base = self.base
        target = parse_target(base.target)
        moved = prediction.host_bytes
        hbm = max(0.0, base.hbm_bytes * scale + OFFLOAD_HBM_PASSES * moved + added_hbm_bytes)
        estimate = estimate_step(target.device, compute_dtype, prediction.flops, hbm,
                                 base.collective_bytes, moved, moved,
                                 num_slices=target.num_slices)
        return estimate.overlapped_seconds

def _segment(knots: list[tuple[int, _Knot]],
             tokens: int) -> tuple[tuple[int, _Knot], tuple[int, _Knot]] | None:
    """The two knots (tokens, value) whose line holds `tokens`: those around it, or the two
    largest where it is above them all; None with one knot or below the smallest."""
    if len(knots) == 1 or tokens < knots[0][0]:
        return None
    index = next((i for i in range(1, len(knots)) if tokens <= knots[i][0]), len(knots) - 1)
    return knots[index - 1], knots[index]


def _kept_names(config: TransformerConfig) -> tuple[str, ...]:
    """The block's names that are residuals of its backward pass (`mlp_out` never is:
    configs/tensors.py)."""
    return tuple(name for name in block_names(config) if name != "mlp_out")


def kept_terms(layers: int, choices: dict[str, str], per_name: dict[str, int]) -> list[Term]:
    terms = []
    for name, choice in choices.items():
        if choice == "device":
            terms += [Term(f"layers × {name} kept", layers, per_name[name]),
                      Term(f"layer × {name} no longer recomputed in the backward working set",
                           -1, per_name[name])]
    return terms


def _gathered_table_bytes(config: TransformerConfig, tensor_ways: int) -> int:
    """The [vocab, d_model] table gathered on one device, in the compute dtype."""
    return config.vocab * config.d_model * DTYPE_BYTES[config.compute_dtype] // tensor_ways


def _deferred(baseline: Baseline) -> int:
    return baseline.deferred_bytes


def _packing(baseline: Baseline) -> int:
    """XLA's allocation above the live peak (its heap's packing), at least 0."""
    return max(0, baseline.allocation_bytes - baseline.live_peak_bytes)


def _span_peak(baseline: Baseline) -> int:
    return baseline.layer_span_peak_bytes


def _outside_peak(baseline: Baseline) -> int:
    return baseline.outside_span_peak_bytes


def _total(terms: list[Term]) -> int:
    return sum(term.value for term in terms)


def predictor(baselines: Sequence[Baseline]) -> Predictor:
    return Predictor(tuple(baselines))
