"""Where libtpu runs llama-1b's loss, before or after the backward layer loop, and what each
order's live peak is, from `benchmarks/logits_placement.py`'s output (its results file: each
device-kept program's loss order, stacks, f32 logits and packing, the temporary allocation above
the live peak) and the squeeze fixture's allocations and `full` baselines. Compiles nothing.

For each program it prints the live peak (XLA's allocation less the packing) and two figures:

- `before`: the moment the loss holds when it runs between the layer loops, `full`'s live peak
  outside its loops plus every stack (layer inputs and kept names), and `extra`, how far the
  live peak is above it (the gathered embedding table, vocab x d_model bf16, is 0.49 GiB);
- `after tight`: the predictor's allocation less `full`'s packing at that batch, the after-loop
  order with the f32 logits placed in the space the stacks free (no packing; what libtpu does
  where the stacks are at least the logits' size), and its error on XLA's allocation next to
  the predictor's;
- `gap`: the before-loop moment with the table (`before` + 0.49) less `after tight`: which of
  the two orders would need less.

    python benchmarks/loss_order.py [--placement benchmarks/results/logits_placement_llama1b.txt]
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parent.parent
FIXTURE = ROOT / "fixtures" / "predict" / "llama-v5e-squeezed.json"
PLACEMENT = ROOT / "benchmarks" / "results" / "logits_placement_llama1b.txt"
GIB = 2**30
TABLE = 128256 * 2048 * 2 / GIB  # llama-1b's gathered embedding table, bf16
DEVICES = 4  # tpu:v5e:2x2: the fixture's batches are global
ROW = re.compile(r"\s*(\d+) (\S+)\s+(\w+)\s+(before|after)\s+([\d.]+)\s+([\d.]+)\s+[\d.]+\s+"
                 r"(-?[\d.]+)\s+([+-][\d.]+)%")


@dataclass(frozen=True)
class Placement:
    """One row of logits_placement.py's table (GiB)."""

    batch: int  # per device
    policy: str
    order: str
    loss: str
    stacks: float
    logits: float
    packing: float
    error: float  # the predictor's, on XLA's allocation


def placements(text: str) -> list[Placement]:
    rows = []
    for line in text.splitlines():
        match = ROW.match(line)
        if match:
            b, policy, order, loss, stacks, logits, packing, error = match.groups()
            rows.append(Placement(int(b), policy, order, loss, float(stacks), float(logits),
                                  float(packing), float(error) / 100))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--placement", type=Path, default=PLACEMENT)
    args = parser.parse_args()
    record = json.loads(FIXTURE.read_text())["llama-1b"]
    allocation = {(c["batch"] // DEVICES, c["policy"]): c["allocation_bytes"] / GIB
                  for c in record["compiled"] if c["allocation_bytes"]}
    outside = {b["config"]["batch"] // DEVICES: b["outside_span_peak_bytes"] / GIB
               for b in record["baselines"]}
    rows = placements(args.placement.read_text())
    full_packing = {r.batch: r.packing for r in rows if r.policy == "*=remat"}
    print(f"# python benchmarks/loss_order.py (inputs: {args.placement.name}, {FIXTURE.name}; GiB)")
    print(f"{'pdb':>3} {'policy':60} {'loss':6} {'stacks/logits':>13} {'live':>6} "
          f"{'before':>6} {'extra':>6} {'predictor':>9} {'after tight':>11} {'gap':>6}")
    for r in rows:
        if r.policy == "*=remat" or r.batch not in outside:
            continue
        compiled = allocation[r.batch, f"names:{r.policy}"]
        live = compiled - r.packing
        before = outside[r.batch] + r.stacks
        tight = compiled * (1 + r.error) - full_packing[r.batch]
        print(f"{r.batch:>3} {r.policy[:60]:60} {r.loss:6} {r.stacks / r.logits:>13.2f} "
              f"{live:>6.2f} {before:>6.2f} {live - before:>+6.2f} {r.error:>+9.1%} "
              f"{tight / compiled - 1:>+11.1%} {before + TABLE - tight:>+6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
