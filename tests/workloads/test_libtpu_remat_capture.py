"""A TPU build keeps libtpu's INFO log in its compile.log (`workloads/runner.py`), so what
libtpu says of its memory-pressure rematerialization can be read from the build."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hloscope.analyses.predict.model import Predictor
from hloscope.cli.main import cli
from hloscope.parsers.libtpu_log import parse_libtpu_log
from hloscope.sweeps.frontier_run import baseline_from_build

MIB = 2**20


@pytest.mark.compile
def test_a_build_captures_libtpus_rematerialization(tmp_path: Path):
    """tiny on v5e with libtpu's limit at 0% of the HBM: libtpu rematerializes, cannot reach
    0 bytes, and says so in the build's compile.log; its arguments and aliased outputs are the
    build's memory figures (libtpu prints two decimals of MiB)."""
    folder = tmp_path / "b"
    result = CliRunner().invoke(cli, [
        "build", "--model", "tiny", "--target", "tpu:v5e:2x2", "--seq", "512", "--batch", "64",
        "--policy", "full", "-o", str(folder),
        "--xla-flag=--xla_jf_rematerialization_percent_shared_memory_limit=0",
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
