"""The frontier search's shown predictions against its compiles, where libtpu's loss order can
decide the allocation (issue 37 item 4): tiny (4 scanned layers) and llama-1b on tpu:v5e:2x2,
each at two sequence lengths.

Each case runs `hloscope sweep --search frontier` (deviceless compiles, the build cache) and
reads its frontier.json. For every compiled candidate it prints the allocation its row shows
(`predicted_bytes`), the loss order read from its build where the two orders differ
(`analyses/predict/loss_order.py`), the two orders' figures, the figure the search held when it
compiled it (`search_predicted_bytes`), XLA's allocation and the errors (shown / compiled - 1;
the halfway figure's, the hedge shown before, alongside). `full` is compiled as the baseline and
shown at its own figure: it is left out of the errors.

    python benchmarks/frontier_accuracy.py [--out DIR] [--case NAME ...] [--reuse]
        [--repredict NAME=DIR ...]

--reuse reads the frontier.json files already in DIR instead of running the searches.
--repredict takes a case's search from DIR (a frontier folder an earlier hloscope wrote) and
predicts its compiled rows again with this hloscope: the predictor from the folder's baselines,
the loss order read from each row's build, as the search does (which candidates the search
compiles does not depend on either: it ranks and fits by the need). The held figure is not
recomputed there.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

TARGET = "tpu:v5e:2x2"
LLAMA_NAMES = "attn_out,query_proj,mlp_gate,mlp_up"
FULL = "names:*=remat"
MIB = 2**20
TPU_ENV = {"JAX_PLATFORMS": "cpu", "TPU_SKIP_MDS_QUERY": "1",
           "TPU_ACCELERATOR_TYPE": "v5litepod-4", "TPU_WORKER_HOSTNAMES": "localhost",
           "TPU_WORKER_ID": "0", "ALLOW_MULTIPLE_LIBTPU_LOAD": "1"}


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[str, ...]  # the sweep's model, shape and search options


CASES = (
    Case("tiny-seq2048", ("--model", "tiny", "--layers", "4", "--scan", "--seq", "2048",
                          "--batch", "8")),
    Case("tiny-seq1024", ("--model", "tiny", "--layers", "4", "--scan", "--seq", "1024",
                          "--batch", "16")),
    Case("llama-1b-seq2048", ("--model", "llama-1b", "--seq", "2048", "--batch", "12",
                              "--names", LLAMA_NAMES)),
    Case("llama-1b-seq1024", ("--model", "llama-1b", "--seq", "1024", "--batch", "16",
                              "--names", LLAMA_NAMES)),
)


def run_case(case: Case, folder: Path) -> float:
    """Run the case's frontier search into `folder`; its wall seconds."""
    command = ["hloscope", "sweep", *case.args, "--target", TARGET, "--search", "frontier",
               "-o", str(folder), "--force", "--format", "json"]
    start = time.monotonic()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env={**os.environ, **TPU_ENV})
    return time.monotonic() - start


def case_lines(case: Case, data: dict) -> tuple[list[str], list[float]]:
    lines = [f"{case.name}: hloscope sweep {' '.join(case.args)} --target {TARGET} --search "
             f"frontier ({data['compiles']} compiles, {data['candidates']} candidates)",
             f"  {'batch':>5} {'policy':52} {'order':6} {'after':>8} {'before':>8} "
             f"{'shown':>8} {'held':>8} {'compiled':>8} {'error':>7} {'halfway':>7}"]
    errors = []
    for row in data["rows"]:
        compiled = row["compiled_bytes"]
        if not compiled:
            continue
        orders = row.get("predicted_loss_order_bytes") or [None, None]
        held = row.get("search_predicted_bytes")
        error = row["predicted_bytes"] / compiled - 1
        halfway = (f"{(orders[0] + orders[1]) / 2 / compiled - 1:+7.1%}"
                   if orders[0] is not None else f"{'-':>7}")
        if row["policy"] != FULL:
            errors.append(error)
        lines.append(f"  {row['batch']:>5} {row['policy'].removeprefix('names:')[:52]:52} "
                     f"{row.get('loss_order') or '-':6} {_mib(orders[0])} {_mib(orders[1])} "
                     f"{_mib(row['predicted_bytes'])} {_mib(held)} {_mib(compiled)} "
                     f"{error:+7.1%} {halfway}")
    return lines, errors


def repredicted(data: dict) -> dict:
    """`data` (a frontier.json) with its compiled rows predicted by this hloscope."""
    from hloscope.analyses.predict.baseline import Baseline
    from hloscope.analyses.predict.model import Predictor
    from hloscope.sweeps.frontier_run import read_loss_order

    predictor = Predictor(tuple(Baseline.from_dict(b) for b in data["baselines"]))
    rows = []
    for row in data["rows"]:
        if not row["compiled_bytes"]:
            continue
        p = predictor.predict(row["policy"], row["batch"])
        if p.loss_order_undecided and row["build_folder"]:
            p = p.settled(read_loss_order(row["build_folder"]), "its compile")
        rows.append({**row, "predicted_bytes": p.allocation_bytes, "loss_order": p.loss_order,
                     "predicted_loss_order_bytes": p.undecided_loss_orders(),
                     "search_predicted_bytes": None})
    return {**data, "rows": rows}


def _mib(value: int | None) -> str:
    return f"{'-':>8}" if value is None else f"{value / MIB:8.0f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/frontier_accuracy"))
    parser.add_argument("--case", action="append", choices=[c.name for c in CASES])
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--repredict", action="append", default=[], metavar="NAME=DIR")
    args = parser.parse_args()
    again = dict(item.split("=", 1) for item in args.repredict)
    chosen = set(args.case or ()) | set(again)
    cases = [c for c in CASES if not chosen or c.name in chosen]
    print(f"# python benchmarks/frontier_accuracy.py {' '.join(sys.argv[1:])}".rstrip())
    print("# MiB per device; shown: the row's predicted_bytes; held: the search's figure when it "
          "compiled it; error: shown / compiled - 1; halfway: the two orders' mean, likewise")
    every: list[float] = []
    for case in cases:
        folder = Path(again[case.name]) if case.name in again else args.out / case.name
        if not args.reuse and case.name not in again:
            seconds = run_case(case, folder)
            print(f"# {case.name}: {seconds:.0f} s")
        data = json.loads((folder / "frontier.json").read_text())
        if case.name in again:
            data = repredicted(data)
            print(f"# {case.name}: the search of {folder}, its compiled rows predicted again")
        lines, errors = case_lines(case, data)
        every += errors
        print("\n".join(lines))
    if every:
        within = sum(abs(e) <= 0.05 for e in every)
        print(f"compiled candidates (not `full`): {len(every)}, errors {min(every):+.1%} to "
              f"{max(every):+.1%}, {within} within 5%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
