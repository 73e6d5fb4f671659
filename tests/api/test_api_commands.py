"""The API functions of the commands that had none: trace, snapshot, check, build, sweep; each
gives what its command prints (`--format json`) and writes the same files.

Truths: hand-counted FLOPs of an 8x8 dot (2·8·8·N), XLA's own figures in the committed build and
trace fixtures, and the CLI's documents (which the rest of the suite checks against XLA).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

import hloscope
from hloscope.cli.main import cli
from hloscope.errors import EXIT_INPUT_MALFORMED, ParseError, UsageError
from hloscope.formats.build import read_build
from hloscope.formats.sweep import read_sweep

DOT = """HloModule dot, is_scheduled=true

ENTRY main {
  a = f32[8,8] parameter(0)
  b = f32[8,COLS] parameter(1)
  ROOT d = f32[8,COLS] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
TRACE_FOLDER = FIXTURES / "cpu-trace" / "full-scan"
TRACE_HLO = next((TRACE_FOLDER / "hlo").glob("*.txt.gz"))
TPU_OOM_BUILD = FIXTURES / "tpu-v5e-2x2-oom"


def dot(folder: Path, cols: int) -> Path:
    path = folder / f"dot{cols}.hlo"
    path.write_text(DOT.replace("COLS", str(cols)))
    return path


def cli_run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def cli_json(*args: str) -> dict:
    code, output = cli_run(*args, "--format", "json")
    assert code in (0, 1), output
    return json.loads(output[output.index("{"):])


def test_snapshot_writes_the_file_the_cli_writes(tmp_path: Path) -> None:
    path = dot(tmp_path, 8)
    snapshot = hloscope.snapshot(path, output=tmp_path / "api.json")
    assert snapshot.metrics["total_flops"] == 2 * 8 * 8 * 8
    assert cli_run("snapshot", str(path), "-o", str(tmp_path / "cli.json"))[0] == 0
    assert (tmp_path / "api.json").read_bytes() == (tmp_path / "cli.json").read_bytes()
    assert snapshot.to_dict() == {k: v for k, v in cli_json("snapshot", str(path)).items()}
    with pytest.raises(hloscope.HloscopeError, match="--force"):
        hloscope.snapshot(path, output=tmp_path / "api.json")


def test_check_passes_and_fails_as_the_cli_does(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    hloscope.snapshot(dot(tmp_path, 8), output=baseline)
    grown = dot(tmp_path, 9)  # 1152 FLOPs: +12.5%
    passed = hloscope.check(grown, baseline, max_flops_increase="12.5%")
    failed = hloscope.check(hloscope.load_program(grown), baseline, max_flops_increase="12%")
    assert passed.passed and not failed.passed
    assert [v.metric for v in failed.violations] == ["total_flops"]
    assert failed.figures["total_flops"] == (1024, 1152)
    document = cli_json("check", str(grown), "--baseline", str(baseline),
                        "--max-flops-increase", "12%")
    assert {k: v for k, v in document.items() if k != "schema"} == failed.to_dict()
    assert cli_run("check", str(grown), "--baseline", str(baseline),
                   "--max-flops-increase", "12%")[0] == 1
    assert failed.kinds["total_flops"] == "flops" and failed.kinds["peak_bytes"] == "bytes"


def test_check_errors(tmp_path: Path) -> None:
    path = dot(tmp_path, 8)
    baseline = tmp_path / "baseline.json"
    hloscope.snapshot(path, output=baseline)
    with pytest.raises(UsageError, match="needs a device"):
        hloscope.check(path, baseline, max_step_time_increase="5%")
    with pytest.raises(UsageError, match="percentage"):
        hloscope.check(path, baseline, device="v5e", max_step_time_increase="5MiB")
    baseline.write_text('{"schema": "hloscope/snapshot/v1",\n "metrics": [}')
    with pytest.raises(ParseError) as raised:
        hloscope.check(path, baseline)
    assert raised.value.exit_code == EXIT_INPUT_MALFORMED
    assert raised.value.location.line == 2


def test_trace_is_the_cli_document(tmp_path: Path) -> None:
    result = hloscope.trace(TRACE_FOLDER, hlo=TRACE_HLO, xprof=False,
                            export=tmp_path / "perfetto.json")
    document = cli_json("trace", str(TRACE_FOLDER), "--hlo", str(TRACE_HLO), "--no-xprof")
    assert document.pop("by") == "phase"  # the report adds the breakdown it shows
    assert {k: v for k, v in document.items() if k != "schema"} == json.loads(
        json.dumps(result.to_dict()))
    exported = json.loads((tmp_path / "perfetto.json").read_text())
    assert exported["traceEvents"]
    assert result.device == "cpu"  # a host-only trace is judged against the CPU
    with pytest.raises(hloscope.HloscopeError, match="--force"):
        hloscope.trace(TRACE_FOLDER, hlo=TRACE_HLO, export=tmp_path / "perfetto.json")


def test_oom_on_a_build_folder_is_the_cli_document() -> None:
    diagnosis = hloscope.oom(TPU_OOM_BUILD)
    document = cli_json("oom", str(TPU_OOM_BUILD))
    assert {k: v for k, v in document.items() if k != "schema"} == json.loads(
        json.dumps(diagnosis.to_dict()))
    assert diagnosis.fits is False and diagnosis.remedies  # the build's config gives remedies


@pytest.mark.compile
def test_build_and_sweep_write_what_the_cli_writes(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    built = hloscope.build(tmp_path / "build", model="tiny", policy="full", target="cpu",
                           cache=cache, n_layers=2)
    assert built.passed and not built.cached and built.figures.status == "ok"
    assert read_build(tmp_path / "build").manifest == built.build.manifest
    assert built.build.manifest["variant"] == "full"
    assert built.build.manifest["config"]["n_layers"] == 2
    again = hloscope.build(tmp_path / "build", model="tiny", policy="full", target="cpu",
                           cache=cache, force=True, n_layers=2)
    assert again.cached and again.figures.fingerprint == built.figures.fingerprint
    document = cli_json("build", "--model", "tiny", "--layers", "2", "--policy", "full",
                        "--target", "cpu", "--cache-dir", str(cache), "-o",
                        str(tmp_path / "cli-build"))
    assert document["cache_hit"] and document["figures"] == json.loads(
        json.dumps(again.figures.to_dict())) | {"compile_seconds": document["figures"][
            "compile_seconds"]}

    result = hloscope.sweep(model="tiny", policies="none,full", target="cpu",
                            output=tmp_path / "sweep", cache=cache, n_layers=2)
    record = read_sweep(tmp_path / "sweep")
    assert record.winner == result.winner and record.data["schema"] == "hloscope/sweep/v1"
    assert {row.variant for row in record.variants} == {"none", "full"}
    full = next(row for row in record.variants if row.variant == "full")
    assert full.build_in(record.folder) is not None
    assert full.total_flops == built.figures.hlo.total_flops
    with pytest.raises(hloscope.HloscopeError, match="--force"):
        hloscope.sweep(model="tiny", policies="none", target="cpu", output=tmp_path / "sweep",
                       cache=cache, n_layers=2)


def test_inspect_and_remat_take_a_path_like_the_other_functions(tmp_path: Path) -> None:
    """`hloscope.inspect`/`remat` on a path give what the CLI prints; the dot's FLOPs by hand."""
    path = dot(tmp_path, 16)
    summary = hloscope.inspect(str(path))
    assert summary.to_dict() == hloscope.inspect(hloscope.load(path)).to_dict()
    printed = json.loads(CliRunner().invoke(cli, ["inspect", str(path), "--format", "json"]).output)
    assert printed["total_flops"] == summary.to_dict()["total_flops"] == 2 * 8 * 8 * 16
    recomputed = hloscope.remat(hloscope.load_program(path))
    assert recomputed.to_dict()["remat_instructions"] == 0
