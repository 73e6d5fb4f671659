"""Which order libtpu's memory scheduler gave a compiled program's loss: before the backward
layer loop or after it (no jax).

Where the baselines do not decide it (`Predictor._loss_orders`) the two orders' allocations
can differ by more than the predictor's 5% target; the frontier search then reads the order
from the compile of the candidate itself and predicts that order's figure
(`Prediction.settled`). The order is read from libtpu's dumps of the build, as
`benchmarks/logits_placement.py` reads it: the loss's f32 logits (f32, [tokens, vocab] on one
device) are made after the backward loop, the last while loop of the entry computation in the
flattened schedule (`*-live-range.txt`), or before it. The sweeps read the dumps
(`sweeps.frontier_run.read_loss_order`); this module only decides from what they read.
"""
from __future__ import annotations

import math
import re

from hloscope.model.xla_memory import BufferAssignment, LiveRangeDump

AFTER, BEFORE = "after", "before"
_F32_SHAPE = re.compile(r"^f32\[([\d,]*)\]")


def loss_order(ranges: LiveRangeDump | None, assignment: BufferAssignment | None,
               entry: set[str], logits_elements: int) -> str | None:
    """AFTER where the first f32 value of `logits_elements` elements starts after the entry's
    last while loop (the backward layer loop) in the schedule, BEFORE where it starts before."""
    if ranges is None or assignment is None:
        return None
    loops = [t for t, name in enumerate(ranges.sequence) if name in entry
             and name.startswith("while")]
    if not loops:
        return None
    starts = {i.key: i.start for i in ranges.intervals}
    made = [starts[v.key] for _, v in assignment.values()
            if v.key in starts and _f32_elements(v.shape) == logits_elements]
    if not made:
        return None
    return AFTER if min(made) > loops[-1] else BEFORE


def _f32_elements(shape: str) -> int | None:
    match = _F32_SHAPE.match(shape)
    if match is None:
        return None
    return math.prod(int(d) for d in match.group(1).split(",") if d)
