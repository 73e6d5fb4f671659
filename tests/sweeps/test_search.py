"""`--search batch` on recorded fit tables: which batches it compiles, in which order, what it
answers and where it reports that fit was not monotonic (no compiles).

Independent truth: each table is a verdict per batch written down here (the first is
docs/sweeps.md's measured libtpu case: 128 fits, 256 does not, 384 does, 512 does not); every
expected probe sequence is worked out by hand from the rules in docs/sweeps.md, 'The search
rules', step by step in the comments, and the guarantee stated there is checked on
random tables against the table itself. The wiring (request -> scheduler -> rows -> report) runs
the real `run_sweep` with an executor that answers from a table instead of compiling.
"""
from __future__ import annotations

import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from hloscope.analyses.roofline import estimate_step
from hloscope.analyses.summary.variant import HloFigures, VariantFigures
from hloscope.api import sweep_request
from hloscope.cli.main import cli
from hloscope.devices import get_device
from hloscope.reports.renderers.text import render as render_text
from hloscope.reports.sweep import sweep_report
from hloscope.sweeps import core
from hloscope.sweeps.executor_base import Completion
from hloscope.sweeps.search import (
    END_BOUNDARY,
    END_BUDGET,
    END_MAX_BATCH,
    END_NO_VERDICT,
    END_NOTHING_FITS,
    BatchSearch,
)
from hloscope.sweeps.tasks import CompileTask, TaskOutcome

Table = dict[int, bool | None]  # batch -> fits (None: the compile gave no verdict)
# docs/sweeps.md's measured case (nested:8 on v6e:8x16), every batch above 512 failing too
MEASURED_TABLE: Table = {128: True, 256: False, 384: True, 512: False, 640: False, 768: False,
                       896: False, 1024: False}


def drive(search: BatchSearch, table: Table) -> list[int]:
    """Runs the search against the table; the batches it compiled, in order (a batch missing
    from the table is a KeyError: the search asked for something the test did not foresee)."""
    while (batch := search.next_batch()) is not None:
        fits = table[batch]
        search.record(batch, fits, {True: "ok", False: "oom", None: "error"}[fits])
    return [probe.batch for probe in search.probes]


def test_the_design_case_from_below_finds_the_fit_above_a_failure() -> None:
    search = BatchSearch(128, step=128, max_batch=1024)
    # 128 fits -> grow to 256: fails. 128 and 256 are adjacent (nothing to bisect), so the
    # window (128, 384] is tested: 256 is known, 384 fits. Nothing above 384 failed yet -> grow
    # to 768: fails; bisect 384..768 -> 512: fails; window (384, 640]: 640 fails. Done.
    assert drive(search, MEASURED_TABLE) == [128, 256, 384, 768, 512, 640]
    assert (search.chosen_batch, search.largest, search.smallest_failing) == (384, 384, 512)
    assert search.non_monotonic == [(256, 384)] and search.end == END_BOUNDARY
    # the old search stopped at the first boundary: after [128, 256] its answer was 128


def test_the_design_case_from_above() -> None:
    search = BatchSearch(512, step=128, max_batch=1024)
    # 512 fails -> shrink to 256: fails -> 128: fits. 128..256 adjacent: window (128, 384]:
    # 384 fits. The smallest failure above 384 is 512, adjacent: window (384, 640]: 640 fails.
    assert drive(search, MEASURED_TABLE) == [512, 256, 128, 384, 640]
    assert (search.chosen_batch, search.smallest_failing) == (384, 512)
    assert search.non_monotonic == [(256, 384)] and search.end == END_BOUNDARY


def test_the_design_case_at_its_own_max_batch() -> None:
    search = BatchSearch(128, step=128, max_batch=512)
    # 128 fits, 256 fails, window: 384 fits; grow to min(768, 512) = 512: fails, adjacent;
    # the window (384, 640] holds only 512 below max_batch, already known.
    assert drive(search, MEASURED_TABLE) == [128, 256, 384, 512]
    assert search.chosen_batch == 384 and search.non_monotonic == [(256, 384)]


def test_a_monotonic_table_costs_one_window_compile_more_than_bisection() -> None:
    table = {batch: batch <= 40 for batch in range(8, 4097, 8)}
    search = BatchSearch(16, step=8, max_batch=4096)
    # 16, 32 fit; 64 fails; bisect 32..64 -> 48: fails; 32..48 -> 40: fits; 40..48 adjacent.
    # Window (40, 56]: 48 known, 56 fails. The old search made the first five compiles.
    assert drive(search, table) == [16, 32, 64, 48, 40, 56]
    assert (search.chosen_batch, search.smallest_failing) == (40, 48)
    assert search.non_monotonic == [] and search.end == END_BOUNDARY


def test_nothing_fits() -> None:
    table: Table = {batch: False for batch in range(4, 33, 4)}
    search = BatchSearch(32, step=4, max_batch=1024)
    # 32, 16, 8, 4 fail; the window (0, 8] is 4 and 8, both known.
    assert drive(search, table) == [32, 16, 8, 4]
    assert (search.largest, search.smallest_failing, search.chosen_batch) == (None, 4, 4)
    assert search.end == END_NOTHING_FITS
    wider = BatchSearch(32, step=4, max_batch=1024, window=3)  # (0, 12]: 12 too
    assert drive(wider, table) == [32, 16, 8, 4, 12] and wider.end == END_NOTHING_FITS


def test_a_fit_above_the_smallest_batches() -> None:
    table: Table = {4: False, 8: True, 12: False, 16: False, 24: False}
    search = BatchSearch(16, step=4, max_batch=64)
    # 16 fails -> 8: fits; bisect 8..16 -> 12: fails; window (8, 16]: known. 4 never tried
    # (below the answer it does not matter).
    assert drive(search, table) == [16, 8, 12]
    assert search.chosen_batch == 8 and search.non_monotonic == []
    start_low = BatchSearch(4, step=4, max_batch=64)
    # 4 fails: nothing fits down to the step; window (0, 8]: 8 fits -> grow to 16: fails;
    # bisect 8..16 -> 12: fails; window (8, 16]: known.
    assert drive(start_low, table) == [4, 8, 16, 12]
    assert start_low.chosen_batch == 8 and start_low.non_monotonic == [(4, 8)]


def test_everything_fits_up_to_max_batch() -> None:
    table: Table = {batch: True for batch in range(4, 101, 4)}
    search = BatchSearch(3, step=4, max_batch=102)  # start rounds up to 4, max down to 100
    assert drive(search, table) == [4, 8, 16, 32, 64, 100]
    assert search.chosen_batch == 100 and search.end == END_MAX_BATCH


def test_a_compile_without_a_verdict_ends_the_search() -> None:
    table: Table = {8: True, 16: True, 32: None}
    search = BatchSearch(8, step=8, max_batch=64)
    assert drive(search, table) == [8, 16, 32]  # grow, grow, then no verdict
    assert (search.chosen_batch, search.end) == (16, END_NO_VERDICT)
    first = BatchSearch(8, step=8, max_batch=64)
    assert drive(first, {8: None}) == [8]
    assert (first.largest, first.chosen_batch, first.end) == (None, 8, END_NO_VERDICT)


def test_the_budget_stops_the_search_and_says_so() -> None:
    search = BatchSearch(128, step=128, max_batch=1024, max_probes=4)
    # as from below, cut before the fifth compile (512)
    assert drive(search, MEASURED_TABLE) == [128, 256, 384, 768]
    assert (search.chosen_batch, search.end) == (384, END_BUDGET)


def test_the_window_bounds_what_the_search_can_see() -> None:
    # fits up to 10, fails at 11 and 12, fits at 13 (two failures in between), fails above
    table: Table = {b: b <= 10 or b == 13 for b in range(1, 17)}
    narrow = BatchSearch(4, step=1, max_batch=16)
    # 4, 8 fit; 16 fails; bisect 8..16 -> 12 fails, 8..12 -> 10 fits, 10..12 -> 11 fails;
    # window (10, 12]: both known. 13 lies beyond two failures: outside the guarantee.
    assert drive(narrow, table) == [4, 8, 16, 12, 10, 11]
    assert narrow.chosen_batch == 10 and narrow.non_monotonic == []
    wide = BatchSearch(4, step=1, max_batch=16, window=3)
    # the same, then window (10, 13]: 13 fits; bisect 13..16 -> 14 fails; window (13, 16]: 15
    assert drive(wide, table) == [4, 8, 16, 12, 10, 11, 13, 14, 15]
    assert wide.chosen_batch == 13 and wide.non_monotonic == [(12, 13)]


def test_several_non_monotonic_places_are_all_reported() -> None:
    table: Table = {1: True, 2: False, 3: True, 4: False, 5: True, 6: False, 7: False, 8: False}
    search = BatchSearch(1, step=1, max_batch=8)
    # 1 fits; 2 fails; window: 3 fits; grow to 6: fails; bisect 3..6 -> 4 fails; window (3, 5]:
    # 5 fits; bisect 5..6 adjacent; window (5, 7]: 7 fails.
    assert drive(search, table) == [1, 2, 3, 6, 4, 5, 7]
    assert search.chosen_batch == 5 and search.non_monotonic == [(2, 3), (4, 5)]


@pytest.mark.parametrize("seed", range(200))
def test_the_documented_guarantee_on_random_tables(seed: int) -> None:
    rng = random.Random(seed)
    step, steps = rng.choice([1, 4, 128]), rng.randint(1, 40)
    boundary = rng.randint(0, steps)  # a monotonic fit, then noise near the boundary
    table: Table = {k * step: k <= boundary if abs(k - boundary) > 2 else rng.random() < 0.5
                    for k in range(1, steps + 1)}
    window, budget = rng.randint(1, 3), rng.choice([4, 100])
    search = BatchSearch(rng.randint(1, steps) * step, step, steps * step, window, budget)
    probes = drive(search, table)
    assert len(probes) == len(set(probes)) <= budget
    assert all(table[p.batch] == p.fits for p in search.probes)
    best = search.largest
    if search.end == END_BUDGET:
        return
    if best is None:
        assert search.end == END_NOTHING_FITS
        assert all(k * step in probes for k in range(1, min(window, steps) + 1))
        return
    assert table[best] is True
    if best == steps * step:
        assert search.end == END_MAX_BATCH
        return
    above = range(best + step, min(best + window * step, steps * step) + 1, step)
    assert search.end == END_BOUNDARY and all(b in probes and not table[b] for b in above)
    assert not any(table[b] for b in probes if b > best)
    assert search.non_monotonic == [
        (low, high) for low, high in zip(sorted(probes), sorted(probes)[1:], strict=False)
        if table[high] and not table[low]]


# --- the wiring: request -> scheduler -> rows and report, with an executor that does not compile


class TableExecutor:
    """Answers each compile from a fit table at once."""

    name = "table"

    def __init__(self, table: Table) -> None:
        self.table, self.done = table, []

    def default_slots(self) -> int:
        return 1

    def submit(self, ticket: int, task: CompileTask) -> None:
        batch = task.spec.config.batch
        figures = _figures(task.case, batch, self.table[batch])
        self.done.append(Completion(ticket, TaskOutcome(task.case, batch, str(task.folder),
                                                        False, figures, 0.0)))

    def wait(self, timeout: float) -> list[Completion]:
        done, self.done = self.done, []
        return done

    def close(self, cancel: bool) -> None:
        pass


def _figures(name: str, batch: int, fits: bool | None) -> VariantFigures:
    flops = batch * 10**12
    hlo = HloFigures(total_flops=flops, bytes_accessed=flops // 100, collective_bytes=0,
                     forward_flops=flops // 4, recompute_flops=0, recompute_overhead=0.0,
                     to_host_bytes=0, from_host_bytes=0, unknown_loops=0, parameter_bytes=0,
                     live_peak_bytes=None)
    step = estimate_step(get_device("v5e"), "bfloat16", flops, hlo.bytes_accessed, 0)
    status = {True: "ok", False: "oom", None: "error"}[fits]
    return VariantFigures(variant=name, status=status, batch=batch, tokens=batch * 64,
                          fits=fits, fit_source="table", capacity_bytes=100, required_bytes=50,
                          required_source="table", host_temp_bytes=0, compile_seconds=1.0,
                          xla_flops=None, hlo=hlo, step=step, fingerprint=str(batch),
                          error=None if fits else "RESOURCE_EXHAUSTED: x")


# the measured pattern at 4 devices (v5e 2x2: the batch splits 4 ways)
SMALL_TABLE: Table = {4: True, 8: False, 12: True, 16: False, 20: False, 24: False}


def _sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: Table,
           **options: int) -> core.SweepResult:
    monkeypatch.setattr(core, "open_executor", lambda spec, backend: TableExecutor(table))
    request = sweep_request(model="tiny", policies="full", target="tpu:v5e:2x2",
                            output=tmp_path / "out", search="batch", max_batch=32, batch=4,
                            **options)
    return core.run_sweep(request)


def test_a_sweep_reports_the_step_the_probes_and_where_fit_was_not_monotonic(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _sweep(tmp_path, monkeypatch, SMALL_TABLE)
    data = result.to_dict()
    (row,) = data["variants"]
    # 4 fits; 8 fails; window: 12 fits; grow to 24: fails; bisect -> 16: fails; window: 20
    assert [probe["batch"] for probe in row["probes"]] == [4, 8, 12, 24, 16, 20]
    assert (data["batch_step"], data["search_window"], data["max_probes"]) == (4, 2, 20)
    assert (row["batch"], row["largest_fitting_batch"], row["smallest_failing_batch"]) == \
        (12, 12, 16)
    assert row["non_monotonic"] == [[8, 12]] and row["search_end"] == "boundary"
    assert data["winner"] == "full" and result.compiles == 6
    text = render_text(sweep_report(result))
    assert "note: full: fit is not monotonic in batch: 8 does not fit but 12 does" in text
    assert "searched (largest that fits, per variant), in steps of 4" in text


def test_a_sweep_says_when_the_budget_stopped_its_search(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _sweep(tmp_path, monkeypatch, SMALL_TABLE, max_probes=3)
    (row,) = result.to_dict()["variants"]
    assert [probe["batch"] for probe in row["probes"]] == [4, 8, 12]
    assert row["batch"] == 12 and row["search_end"] == "budget"
    assert any("stopped after --max-probes 3 compiles; 12 is the largest fit found, the steps "
               "above it not all compiled" in note
               for note in result.notes)


def test_the_step_is_what_the_batch_splits_over(tmp_path: Path) -> None:
    def step(**overrides: int) -> int:
        return sweep_request(model="tiny", policies="full", target="tpu:v5e:2x2",
                             output=tmp_path, search="batch", **overrides).batch_step
    assert step() == 4  # data parallel over the 4 chips
    assert step(tensor_parallel=2) == 2  # the tensor axis does not split the batch


def test_search_options_are_checked(tmp_path: Path) -> None:
    runner = CliRunner()
    below = runner.invoke(cli, ["sweep", "--model", "tiny", "--target", "tpu:v5e:2x2", "--search",
                                "batch", "--max-batch", "2", "--no-cache", "-o",
                                str(tmp_path / "out")])
    assert below.exit_code == 2 and "below the smallest batch" in below.output
    assert not (tmp_path / "out").exists()
    zero = runner.invoke(cli, ["sweep", "--search", "batch", "--max-probes", "0"])
    assert zero.exit_code == 2
    help_text = runner.invoke(cli, ["sweep", "--help"]).output
    assert "--search-window" in help_text and "--max-probes" in help_text
