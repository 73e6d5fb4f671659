"""What each checkpoint name of a user's block costs, measured on compiled programs (no jax).

The built-in block's names have closed forms (`configs/tensors.py` for bytes, `flops.py` for the
recompute each saves); a user's block does not. Two compiles at one batch measure a name: `full`
(every name recomputed) and `names:NAME=device` (that name kept). Of those two programs:

- **bytes**: the forward layer loop stacks what the backward loop reads, one `[layers, ...]`
  buffer per residual in its loop state; keeping NAME adds its stack, so the state of the
  program's first entry-level layer loop grows by `layers` × one layer's NAME on one device;
- **FLOPs**: the recompute keeping NAME saves is `full`'s FLOPs less the other program's
  (hloscope's count of each compiled program, per device), over the layers and the tokens;
- **HBM bytes**: what keeping NAME adds to the bytes the program accesses (the other program's
  less `full`'s, the same count: writing and reading the stack, less the recompute's traffic;
  either sign), over the layers and the tokens: the roofline of a memory-bound program turns
  on it.

Per-token figures are per token of the step (global batch × sequence), so they scale with the
batch at the measured sequence length. Savings add across names; where two names share a
producer the sum is an estimate the frontier search's compiles confirm (docs/predict.md, "A
user's step").
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from hloscope.analyses.cost.layer_loops import LayerLoops
from hloscope.errors import UsageError
from hloscope.model.module import HloModule


@dataclass(frozen=True, slots=True)
class LayerStack:
    """The state of a program's forward layer loop: `layers` iterations, `bytes` in all."""

    loop: str
    layers: int
    bytes: int


@dataclass(frozen=True)
class NameCost:
    """One name of a user's block, kept on the device, per token of the step."""

    name: str
    bytes_per_token: float  # one layer's stack of it on one device
    flops_per_token: float  # one layer's recompute on one device that keeping it saves
    hbm_bytes_per_token: float = 0.0  # one layer's HBM traffic keeping it on the device adds

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class MeasuredBlock:
    """The names of a user's block and what each costs, from compiles at `batch`."""

    layers: int
    names: tuple[NameCost, ...]
    batch: int
    seq_len: int

    @property
    def tokens(self) -> int:
        return self.batch * self.seq_len

    def cost(self, name: str) -> NameCost:
        found = next((n for n in self.names if n.name == name), None)
        if found is None:
            raise UsageError(f"no measured name {name!r}; measured: "
                             f"{', '.join(n.name for n in self.names)}")
        return found

    def saved_flops_per_token(self, kept: set[str]) -> float:
        """One layer's recompute per token the `kept` names save (summed; module docstring)."""
        return sum(n.flops_per_token for n in self.names if n.name in kept)

    def added_hbm_bytes_per_token(self, on_device: set[str]) -> float:
        """One layer's HBM traffic per token the `on_device` names add (summed, as FLOPs are)."""
        return sum(n.hbm_bytes_per_token for n in self.names if n.name in on_device)

    def to_dict(self) -> dict[str, Any]:
        return {"layers": self.layers, "batch": self.batch, "seq_len": self.seq_len,
                "names": [n.to_dict() for n in self.names]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MeasuredBlock:
        return cls(int(data["layers"]), tuple(NameCost(**n) for n in data["names"]),
                   int(data["batch"]), int(data["seq_len"]))


def forward_layer_stack(module: HloModule) -> LayerStack | None:
    """The first layer loop of `module`'s entry in its instruction order (the schedule, or a
    topological order: the forward loop comes before the backward loop that reads its stacks),
    and the bytes of its loop state; None where the entry runs no layer loop."""
    loops = {name: loop for (computation, name), loop in LayerLoops(module).loops.items()
             if computation == module.entry_name}
    first = next((i for i in module.entry if i.name in loops), None)
    if first is None:
        return None
    return LayerStack(first.name, loops[first.name].layers, first.shape.byte_size)


@dataclass(frozen=True, slots=True)
class ProgramMeasure:
    """What a name's cost is read from, of one compiled program: its forward layer loop's
    state and hloscope's FLOPs and bytes accessed, per device."""

    stack: LayerStack
    flops: float
    bytes_accessed: float


def measure_program(module: HloModule) -> ProgramMeasure:
    """`module`'s measure; UsageError where it runs no layer loop."""
    from hloscope.analyses.cost.flops import flops

    stack = forward_layer_stack(module)
    if stack is None:
        raise UsageError("measuring a checkpoint name needs the layers in a scan (a layer loop "
                         "in the compiled program): scan them with layers.scan or lax.scan")
    total = flops(module).total
    return ProgramMeasure(stack, total.flops, total.bytes_accessed)


def name_cost(name: str, full: ProgramMeasure, kept: ProgramMeasure, tokens: int) -> NameCost:
    """NAME's cost from `full` and `names:NAME=device` compiled at `tokens` per step."""
    layers = full.stack.layers
    added = max(0, kept.stack.bytes - full.stack.bytes) / layers
    saved = max(0, full.flops - kept.flops) / layers
    traffic = (kept.bytes_accessed - full.bytes_accessed) / layers
    return NameCost(name, added / tokens, saved / tokens, traffic / tokens)
