"""`hloscope trace` and `hloscope profile` end to end: schema, formats, export, a live run."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from hloscope.analyses.memory.analysis import memory
from hloscope.cli.main import cli
from hloscope.configs.config import TransformerConfig, param_count
from hloscope.parsers.hlo_file import load_file

FOLDER = FIXTURES / "cpu-trace" / "full-scan"
HLO = next((FOLDER / "hlo").glob("*.txt.gz"))


def _run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_json_schema_and_top_level_figures() -> None:
    data = json.loads(_run("trace", str(FOLDER), "--hlo", str(HLO), "--format", "json",
                           "--no-xprof"))
    assert data["schema"] == "hloscope/trace/v1"
    assert 0 < data["remat_time_share"] < 1
    assert len(data["step_times_us"]) == 2 and all(t > 0 for t in data["step_times_us"])
    assert "mfu" in data and data["mfu"] is None  # CPU: no peak
    assert {"by_op", "by_phase", "by_scope", "by_layer"} <= data.keys()


@pytest.mark.parametrize("fmt", ["text", "markdown", "csv"])
def test_every_format_renders(fmt: str) -> None:
    for by in ("phase", "scope", "layer", "op"):
        assert _run("trace", str(FOLDER), "--format", fmt, "--by", by, "--no-xprof").strip()


def test_export_has_the_memory_timeline_as_a_counter(tmp_path: Path) -> None:
    export = tmp_path / "hloscope.trace.json"
    _run("trace", str(FOLDER), "--hlo", str(HLO), "--export", str(export), "--no-xprof")
    events = json.loads(export.read_text())["traceEvents"]
    live = [e for e in events if e.get("name") == "live bytes"]
    timeline = memory(load_file(HLO)[0]).timeline
    entry = {step.instruction: step.live_bytes for step in timeline}
    measured = [e for e in _trace_json_ops() if e["args"]["hlo_op"] in entry]
    assert len(measured) > 100
    expected = sorted((round(e["ts"], 3), entry[e["args"]["hlo_op"]]) for e in measured)
    assert sorted((round(e["ts"], 3), e["args"]["bytes"]) for e in live) == expected
    assert any(e.get("ph") == "X" for e in events)
    refused = CliRunner().invoke(cli, ["trace", str(FOLDER), "--export", str(export)])
    assert refused.exit_code == 2  # never overwritten without --force


def _trace_json_ops() -> list[dict]:
    data = json.loads(gzip.decompress(next(FOLDER.rglob("*.trace.json.gz")).read_bytes()))
    return [e for e in data["traceEvents"] if "hlo_op" in e.get("args", {})]


def test_profile_runs_the_tiny_model_and_reports_its_trace(tmp_path: Path) -> None:
    folder = tmp_path / "profile"
    data = json.loads(_run("profile", "--model", "tiny", "--policy", "none", "--steps", "1",
                           "-o", str(folder), "--format", "json"))
    assert list(folder.rglob("*.xplane.pb")) and list((folder / "dump").glob("*.txt"))
    assert data["steps"] == 1 and data["unmatched_events"] == 0
    assert data["remat_time_share"] == 0.0  # nothing is recomputed without remat
    assert data["count_mismatches"] == []
    manifest = json.loads((folder / "profile.json").read_text())
    assert manifest["steps"] == 1
    _assert_state_and_batch_are_the_arguments(manifest)


def _assert_state_and_batch_are_the_arguments(manifest: dict) -> None:
    """XLA's argument bytes of the profiled step: the train state (bf16 parameters, an fp32
    master copy and two fp32 moments, 14 B a parameter, and the int32 step counter) and the
    batch's int32 tokens and targets; the state is donated, so all of it but the batch aliases
    an output. The CPU allocator keeps no counters (memory_stats() is None)."""
    config = TransformerConfig.from_dict(manifest["config"])
    assert config.param_dtype == "bfloat16"
    state = param_count(config) * (2 + 4 + 8) + 4
    figures = manifest["device_memory"]["memory_analysis"]
    assert figures["argument_bytes"] == state + 2 * 4 * config.batch * config.seq_len
    assert figures["alias_bytes"] == state
    assert manifest["device_memory"]["allocator"] is None
