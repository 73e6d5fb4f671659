"""Grid sweeps: `--batch` and `--seq` lists compile every variant at every combination.

Independent truth: the compiled program itself — the optimized HLO's entry takes the token
batch as `s32[batch,seq]` — and the number of cache entries on disk.
"""
from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from sweep_runs import cache_entries, run_sweep_cli

from hloscope.cli.main import cli


def entry_token_shapes(hlo: str) -> set[tuple[int, int]]:
    entry = hlo[hlo.index("\nENTRY") + 1:].split("\n", 1)[0]
    return {(int(b), int(s)) for b, s in re.findall(r"s32\[(\d+),(\d+)\]", entry)}


@pytest.mark.compile
def test_a_grid_sweep_compiles_the_cartesian_product(tmp_path: Path) -> None:
    code, document = run_sweep_cli(tmp_path, "grid", "--policies", "full", "--batch", "4,8",
                                   "--seq", "32,64", "--cache-dir", str(tmp_path / "cache"))
    rows = document["variants"]
    expected = set(itertools.product(("full",), (4, 8), (32, 64)))
    assert {(r["policy"], r["batch"], r["seq_len"]) for r in rows} == expected
    assert len({r["variant"] for r in rows}) == 4 and document["compiles"] == 4
    assert cache_entries(tmp_path / "cache") == 4
    for row in rows:
        hlo = (Path(row["build_folder"]) / "optimized_hlo.txt").read_text()
        assert entry_token_shapes(hlo) == {(row["batch"], row["seq_len"])}, row["variant"]
    assert code == 0 and document["winner"] in {r["variant"] for r in rows}


def test_a_batch_search_takes_one_starting_batch(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["sweep", "--model", "tiny", "--target", "tpu:v5e:2x2",
                                      "--batch", "8,16", "--search", "batch", "--no-cache",
                                      "-o", str(tmp_path / "out")])
    assert result.exit_code == 2 and "one --batch" in result.output
    assert not (tmp_path / "out").exists()
