"""Predict a per-tensor policy of a user's step, from its `full` baselines and its names'
measured costs (`measured.py`) instead of the built-in block's closed forms.

The device figure is the built-in model's (`model.py`) with n(t) measured: `full` at the step's
tokens (piecewise linear through the compiled `full`s), plus L layers of each kept name less the
one layer `full`'s backward working set already held, less what of that fits under `full`'s
peak outside its layer loops (no name offloaded). An offloaded name costs, off TPU with the
layer spans measured, one layer fetched back in the backward loop beyond `full`'s peak above
that loop; otherwise OFFLOAD_DEVICE_COPIES layers of it (the moment libtpu's loss inside the
loops makes on the built-in model needs its layer inputs and logits, which a user's step does
not state). FLOPs: the baseline's per token, less L × the recompute the kept names save,
measured. Step time: the built-in model's roofline with the HBM bytes each name kept on the
device adds, measured (`MeasuredBlock.added_hbm_bytes_per_token`; an offloaded name's stack
traffic is OFFLOAD_HBM_PASSES over its host bytes, as on the built-in model). Not predicted for a
user's step: the built-in model's libtpu terms (the gathered
embedding table and the logits held through the backward loop, whose sizes come from its
config) and gradient accumulation (the step is the user's, micro-batches or not).
"""
from __future__ import annotations

from dataclasses import dataclass

from hloscope.analyses.predict.baseline import baseline_tokens
from hloscope.analyses.predict.measured import MeasuredBlock
from hloscope.analyses.predict.model import (
    OFFLOAD_DEVICE_COPIES,
    OFFLOAD_FETCHED_LAYERS,
    Prediction,
    Predictor,
    Term,
    kept_terms,
)
from hloscope.configs.targets import parse_target
from hloscope.configs.tensors import NAMED_PREFIX, decode_named
from hloscope.errors import UsageError


@dataclass(frozen=True)
class StepPredictor(Predictor):
    """Predictions from `full` baselines of a user's step and its measured names."""

    block: MeasuredBlock | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.block is None:
            raise UsageError("a user step's predictor needs its names measured")
        seq = {b.config["step"]["seq_len"] for b in self.baselines}
        if seq != {self.block.seq_len}:
            raise UsageError("the baselines and the measured names are at different sequence "
                             "lengths")

    @property
    def measured(self) -> MeasuredBlock:
        assert self.block is not None
        return self.block

    def predict(self, policy: str, batch: int, micro_batches: int = 1) -> Prediction:
        if micro_batches != 1:
            raise UsageError("a user step's prediction takes no micro-batches: the step "
                             "accumulates as its factory writes it")
        block = self.measured
        names = tuple(n.name for n in block.names)
        choices = decode_named(policy, names) if policy.startswith(NAMED_PREFIX) else \
            dict.fromkeys(names, "remat")
        tokens = batch * block.seq_len
        per_name = {n.name: round(n.bytes_per_token * tokens) for n in block.names}
        kept = kept_terms(block.layers, choices, per_name)
        device = self._scaling_terms(tokens) + kept + self._headroom_terms(choices, kept, tokens)
        device += self._step_offload_terms(choices, per_name, sum(t.value for t in kept), tokens)
        host = [Term(f"layers × {name} offloaded", block.layers, per_name[name])
                for name, choice in choices.items() if choice == "offload"]
        prediction = Prediction(policy, batch, 1, device, host,
                                self._step_flop_terms(choices, tokens), None, tokens, choices,
                                self._remat_limit(), self._remat_percent())
        scale = tokens / baseline_tokens(self.base)
        dtype = self.base.config["step"].get("compute_dtype", "bfloat16")
        on_device = {name for name, choice in choices.items() if choice == "device"}
        added = block.layers * tokens * block.added_hbm_bytes_per_token(on_device)
        return self._with_step(prediction, scale, dtype, block.layers, per_name, added)

    def _step_offload_terms(self, choices: dict[str, str], per_name: dict[str, int], kept: int,
                            tokens: int) -> list[Term]:
        offloaded = [name for name, choice in choices.items() if choice == "offload"]
        if not offloaded:
            return []
        if parse_target(self.base.target).backend == "tpu" or not self._spans_measured():
            return [Term(f"× {name} offloaded (staging on the device, measured on the built-in "
                         "model)", OFFLOAD_DEVICE_COPIES, per_name[name]) for name in offloaded]
        fetched = [Term(f"layer × {name} offloaded, fetched back in the backward loop",
                        OFFLOAD_FETCHED_LAYERS, per_name[name]) for name in offloaded]
        return fetched + self._backward_loop_slack(sum(t.value for t in fetched), kept, tokens)

    def _step_flop_terms(self, choices: dict[str, str], tokens: int) -> list[Term]:
        block = self.measured
        terms = [Term("tokens × the baseline's FLOPs per token", tokens,
                      self.base.flops / baseline_tokens(self.base))]
        saved = block.saved_flops_per_token({n for n, c in choices.items() if c != "remat"})
        if saved:
            terms.append(Term("layers × tokens × recompute FLOPs per token the kept names save "
                              "(measured)", block.layers * tokens, -saved))
        return terms
