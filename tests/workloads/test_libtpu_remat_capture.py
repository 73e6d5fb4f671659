"""A TPU build keeps libtpu's INFO log in its compile.log (`workloads/runner.py`), so what
libtpu says of its memory-pressure rematerialization can be read from the build."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import hloscope
from hloscope.analyses.cost.flops import cost_analysis, costed_charges
from hloscope.analyses.predict.model import Predictor
from hloscope.cli.main import cli
from hloscope.parsers.libtpu_log import parse_libtpu_log
from hloscope.sweeps.frontier_run import baseline_from_build

MIB = 2**20
XLA_FLAG = "--xla-flag=--xla_jf_rematerialization_percent_shared_memory_limit=0"


@pytest.mark.compile
def test_a_build_captures_libtpus_rematerialization(tmp_path: Path):
    """tiny on v5e with libtpu's limit at 0% of the HBM: libtpu rematerializes, cannot reach
    0 bytes, and says so in the build's compile.log; its arguments and aliased outputs are the
    build's memory figures (libtpu prints two decimals of MiB)."""
    folder = tmp_path / "b"
    result = CliRunner().invoke(cli, [
        "build", "--model", "tiny", "--target", "tpu:v5e:2x2", "--seq", "512", "--batch", "64",
        "--policy", "full", "-o", str(folder),
        XLA_FLAG,
        "--format", "json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output[result.output.index("{"):])["figures"]["libtpu_remat"]
    remat = parse_libtpu_log((folder / "compile.log").read_text()).rematerialization
    assert shown == remat.to_dict()
    figures = json.loads((folder / "memory_analysis.json").read_text())
    assert remat is not None and remat.percent == 0 and remat.limit_bytes == 0
    assert remat.argument_bytes == pytest.approx(figures["argument_bytes"], abs=0.006 * MIB)
    assert remat.aliased_bytes == pytest.approx(figures["alias_bytes"], abs=0.006 * MIB)
    assert remat.reached is False and remat.after_bytes <= remat.before_bytes
    # the predictor reads the build's percent: its limit is libtpu's, and every policy over it
    baseline = baseline_from_build(folder)
    assert baseline.remat_percent == 0
    prediction = Predictor((baseline,)).predict("names:*=remat", 64)
    assert prediction.remat_limit_bytes == remat.limit_bytes == 0 and prediction.squeezed
    assert prediction.allocation_bytes == prediction.device_bytes  # how far: not predicted
    assert any("0% of the usable HBM" in line for line in prediction.explain())
    # what the recompute costs: XLA's `.remat` clones, about as many FLOPs as the instructions
    # they clone (0.5% apart here: the fusions around each differ after later passes), shown
    # beside libtpu's line
    costs = _flops_by_instruction(hloscope.load(folder / "dump"))
    clones = [name for name in costs if ".remat" in name]
    assert clones
    cloned = sum(costs[name.split(".remat")[0]] for name in clones)
    hlo = json.loads(result.output[result.output.index("{"):])["figures"]["hlo"]
    assert hlo["xla_remat_flops"] == sum(costs[name] for name in clones) > 0
    assert hlo["xla_remat_flops"] == pytest.approx(cloned, rel=0.01)
    text = CliRunner().invoke(cli, ["build", "--model", "tiny", "--target", "tpu:v5e:2x2",
                                    "--seq", "512", "--batch", "64", "--policy", "full",
                                    "-o", str(folder), "--force", XLA_FLAG, "--wide"])  # unwrapped
    share = hlo["xla_remat_flops"] / hlo["total_flops"]
    assert f"XLA's .remat clones, {share:.1%} of the step's FLOPs" in text.output


def _flops_by_instruction(module) -> dict[str, int]:
    """FLOPs of each top-level instruction (a fusion: all it fuses), loop trips applied."""
    totals: dict[str, int] = {}
    for charge in costed_charges(cost_analysis(module)):
        totals[charge.top.name] = totals.get(charge.top.name, 0) + charge.cost.flops
    return totals
