"""The frontier search where libtpu's loss order decides the allocation, in the world of the
frontier benchmark's real compiles (no compiler): llama-1b / v5e:2x2, seq 2048, the 27
policies of attn_out, mlp_gate and mlp_up at per-device batches 1 to 3, each "compile" XLA's
allocation of that program (fixtures/predict/llama-v5e-squeezed.json) and the loss order
libtpu's buffer assignment of it showed (benchmarks/results/logits_placement_llama1b.txt)."""
from __future__ import annotations

from pathlib import Path

import pytest
from squeeze_record import RECORD, baselines

from hloscope.analyses.predict.baseline import Baseline
from hloscope.analyses.predict.loss_order import AFTER, BEFORE
from hloscope.analyses.predict.model import LOSS_ORDER_TOLERANCE, Predictor
from hloscope.configs.presets import preset_config
from hloscope.configs.targets import parse_target
from hloscope.devices import memory_budget
from hloscope.sweeps.frontier import FrontierSearch, frontier_names, policy_space

DEVICES = 4
NAMES = ("attn_out", "mlp_gate", "mlp_up")
BATCHES = (4, 8, 12)  # global: per-device 1, 2, 3
RAN_BEFORE = {  # (policy, global batch) libtpu ran the loss before the backward loop
    ("names:attn_out=device,mlp_gate=device,mlp_up=device", 4),
    ("names:mlp_gate=device,mlp_up=device", 4),
    ("names:attn_out=device,mlp_gate=device,mlp_up=device", 8),
}
ALLOCATION = {(c["policy"], c["batch"]): c["allocation_bytes"]
              for c in RECORD["llama-1b"]["compiled"]}
FULL = ("full", "names:*=remat")


class Compiles:
    """`FrontierSearch`'s compiler over the recorded compiles; a folder is `policy@batch`."""

    def __init__(self) -> None:
        self.compiled: list[tuple[str, int]] = []

    def compile_batch(self, policies: list[str], batch: int):
        self.compiled += [(p, batch) for p in policies]
        return {p: (ALLOCATION[_recorded(p), batch] or None, f"{p}@{batch}")
                for p in policies}, len(policies)

    @staticmethod
    def baseline_of(folder: Path) -> Baseline:
        batch = int(str(folder).rsplit("@", 1)[1])
        return next(b for b in baselines("llama-1b") if b.config["batch"] == batch)

    @staticmethod
    def loss_order_of(folder: str) -> str:
        policy, batch = folder.rsplit("@", 1)
        return BEFORE if (policy, int(batch)) in RAN_BEFORE else AFTER


def _recorded(policy: str) -> str:
    return "names:*=remat" if policy in FULL else policy


def search(read_orders: bool):
    compiles = Compiles()
    block = frontier_names(preset_config("llama-1b"))
    capacity = memory_budget(parse_target(RECORD["llama-1b"]["target"]).device)
    result = FrontierSearch(compiles.compile_batch, compiles.baseline_of,
                            policy_space(NAMES, block), BATCHES, capacity, NAMES,
                            loss_order_of=compiles.loss_order_of if read_orders else None).run()
    return result, compiles


def test_every_compiled_candidate_within_5_percent_of_its_shown_prediction():
    result, _ = search(read_orders=True)
    rows = [r for r in result.rows if r["compiled_bytes"]]
    settled = [r for r in rows if r["loss_order"] is not None]
    assert settled, "the search compiled no candidate whose loss order decides its allocation"
    for row in rows:
        assert abs(row["predicted_bytes"] / row["compiled_bytes"] - 1) <= 0.05, row["policy"]
        if row["predicted_loss_order_bytes"] and row["loss_order"] is None:  # not read: close
            after, before = row["predicted_loss_order_bytes"]
            assert abs(before - after) <= LOSS_ORDER_TOLERANCE * min(after, before)


def test_the_order_read_is_the_one_predicted():
    result, _ = search(read_orders=True)
    for row in result.rows:
        if row["loss_order"] is None:
            continue
        after, before = row["predicted_loss_order_bytes"]
        ran = BEFORE if (row["policy"], row["batch"]) in RAN_BEFORE else AFTER
        assert row["loss_order"] == ran
        assert row["predicted_bytes"] == (before if ran == BEFORE else after)
        assert any(ran in line and "its compile" in line for line in row["explain"])


def test_an_open_order_is_not_held_as_a_figure():
    """The search holds no allocation for a candidate whose two orders differ by more than 5%
    until a compile shows its order: at per-device batches 2 and 3 (0.6 and 1.2 GiB apart)."""
    result, _ = search(read_orders=True)
    unheld = 0
    for row in result.rows:
        orders = row["predicted_loss_order_bytes"]
        if row["compiled_bytes"] and orders and row["policy"] not in FULL:
            after, before = orders
            wide = abs(before - after) > LOSS_ORDER_TOLERANCE * min(after, before)
            held = row["search_predicted_bytes"]
            assert held is not None or wide, row["policy"]
            unheld += held is None
    assert unheld == 2  # the first compile at batches 8 and 12: no order read there yet


def test_reading_the_order_costs_no_compile():
    """The order is read from the compiles the search makes anyway."""
    with_orders, compiles = search(read_orders=True)
    without, others = search(read_orders=False)
    assert compiles.compiled == others.compiled
    assert with_orders.winners == without.winners


@pytest.mark.parametrize("batch", [4, 8, 12])
def test_an_open_order_is_not_shown_as_predicted(batch):
    """Unread, an order whose two figures differ by more than the target says so."""
    prediction = Predictor(baselines("llama-1b")).predict(
        "names:attn_out=device,mlp_gate=device,mlp_up=device", batch)
    after, before = prediction.loss_order_allocations(prediction.device_bytes)
    assert prediction.loss_order_open == (abs(before - after) > 0.05 * min(after, before))
    if prediction.loss_order_open:
        assert "not predicted" in prediction.explain()[-1]


def _dumps(logits_at: int, loop_in_entry: bool = True):
    """A flattened schedule with two entry while loops (positions 1 and 3) and one f32[2,4]
    value (the logits, 8 elements) made at `logits_at`, a bf16 one of the same elements at 0."""
    from hloscope.parsers.xla_memory.buffer_assignment import parse_buffer_assignment
    from hloscope.parsers.xla_memory.live_range import parse_live_range

    ranges = parse_live_range(f"""HloLiveRange (max 5):
  InstructionSequence:
    0:held
    1:while.1
    2:fusion.1
    3:while.2
    4:fusion.2
  BufferLiveRange:
    held{{}}:0-5
    logits{{}}:{logits_at}-5
""")
    assignment = parse_buffer_assignment("""BufferAssignment:
allocation 0: size 64, preallocated-temp:
 value: <1 held @0> (size=16,offset=0): bf16[2,4]{1,0}
 value: <2 logits @0> (size=32,offset=16): f32[2,4]{1,0}
""")
    entry = {"held", "while.1", "fusion.1", "fusion.2"} | ({"while.2"} if loop_in_entry else set())
    return ranges, assignment, entry


@pytest.mark.parametrize(("logits_at", "order"), [(4, AFTER), (2, BEFORE), (0, BEFORE)])
def test_the_order_is_where_the_f32_logits_are_made(logits_at, order):
    from hloscope.analyses.predict.loss_order import loss_order

    assert loss_order(*_dumps(logits_at), logits_elements=8) == order


def test_no_order_without_the_logits_or_the_loops():
    from hloscope.analyses.predict.loss_order import loss_order

    ranges, assignment, entry = _dumps(4)
    assert loss_order(ranges, assignment, entry, logits_elements=16) is None  # no such f32
    assert loss_order(ranges, assignment, set(), logits_elements=8) is None  # no entry loop
    assert loss_order(None, assignment, entry, logits_elements=8) is None
    # the last loop of the entry is the backward one: while.2 outside it leaves while.1
    assert loss_order(*_dumps(2, loop_in_entry=False), logits_elements=8) == AFTER


@pytest.mark.compile
def test_tiny_tpu_frontier_of_the_issue_within_5_percent(tmp_path):
    """Issue 37's case: tiny, 4 scanned layers, seq 2048, tpu:v5e:2x2. Keeping attn_out, its
    stacks are the f32 logits' size, and its allocation was shown halfway between the two loss
    orders, 123 MiB ± 96 MiB, against 226 MiB compiled; its f32 logits (8 MiB) need not take
    HBM (ON_CHIP_LOGITS_BYTES): the need. Each compiled row's shown figure against XLA's
    allocation."""
    import hloscope
    from hloscope.sweeps.grid import Grid

    result = hloscope.sweep(model="tiny", target="tpu:v5e:2x2", output=tmp_path / "frontier",
                            grid=Grid((2048,), (8,)), search="frontier", names="attn_out",
                            choices="device,remat", n_layers=4, scan_layers=True)
    rows = [r for r in result.rows if r["compiled_bytes"]]
    kept = [r for r in rows if r["policy"] == "names:attn_out=device"]
    assert kept and kept[0]["predicted_loss_order_bytes"] is None
    for row in rows:
        assert abs(row["predicted_bytes"] / row["compiled_bytes"] - 1) <= 0.05, row["policy"]
