"""`hloscope trace` on each capture of ../shared/wild-traces/: the libtpu capture and its xprof
export join, the non-XLA captures are refused for what they are, the damaged one says so; each
with its own exit code (hloscope.errors). Truths: what each file is, per the folder's README."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from wild_traces import (
    JIT_F,
    KINETO,
    TENSORFLOW_GPU,
    TPU,
    TPU_DAMAGED,
    TPU_EXPORT,
    XPROF_TOTAL_US,
    wild,
)

from hloscope.cli.main import cli
from hloscope.errors import EXIT_INPUT_MALFORMED, EXIT_NO_HLO, EXIT_NOT_XLA, EXIT_OK


def _invoke(*args: str):
    return CliRunner().invoke(cli, ["trace", *args, "--no-xprof"])


def test_the_tpu_capture_joins_without_hlo() -> None:
    result = _invoke(str(wild(TPU)), "--format", "json")
    assert result.exit_code == EXIT_OK, result.output
    data = json.loads(result.stdout)
    assert data["program_id"] == JIT_F and data["unmatched_events"] == 0
    assert data["op_stats"]["total_us"] == pytest.approx(XPROF_TOTAL_US, abs=1)


def test_the_export_joins_with_the_capture_as_hlo() -> None:
    result = _invoke(str(wild(TPU_EXPORT)), "--hlo", str(wild(TPU)), "--by", "op")
    assert result.exit_code == EXIT_OK, result.output
    assert "copy-done.4" in result.stdout


def test_the_export_alone_exits_no_hlo_and_names_the_ids(tmp_path) -> None:
    """A copy of the export in a folder without its capture (beside it, the capture is used)."""
    alone = tmp_path / TPU_EXPORT
    alone.write_bytes(wild(TPU_EXPORT).read_bytes())
    result = _invoke(str(alone))
    assert result.exit_code == EXIT_NO_HLO
    assert str(JIT_F) in result.output and "--hlo" in result.output
    assert "Traceback" not in result.output


def test_tensorflow_without_xla_is_refused() -> None:
    result = _invoke(str(wild(TENSORFLOW_GPU)))
    assert result.exit_code == EXIT_NOT_XLA
    assert "TensorFlow" in result.output and "no XLA op" in result.output
    assert "pass --hlo" not in result.output.lower()


@pytest.mark.parametrize("name", KINETO)
def test_pytorch_kineto_traces_are_refused(name: str) -> None:
    result = _invoke(str(wild(name)))
    assert result.exit_code == EXIT_NOT_XLA
    assert "PyTorch" in result.output and "pass --hlo" not in result.output.lower()


def test_the_damaged_capture_says_it_is_damaged() -> None:
    result = _invoke(str(wild(TPU_DAMAGED)))
    assert result.exit_code == EXIT_INPUT_MALFORMED
    assert "damaged" in result.output and "Traceback" not in result.output
