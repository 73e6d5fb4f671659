"""`hloscope snapshot` and `hloscope check`: thresholds at their exact boundaries on hand-built
modules whose FLOPs (2·M·N·K for a dot) and peak (entry parameters live throughout, plus the
result) are known by construction; the step summary; the baseline's errors."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from hloscope.cli.main import cli

DOT = """HloModule m, is_scheduled=true
ENTRY main {
  a = f32[8,8] parameter(0)
  b = f32[8,COLS] parameter(1)
  ROOT d = f32[8,COLS] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def write_dot(folder, n: int):
    path = folder / f"dot{n}.hlo"
    path.write_text(DOT.replace("COLS", str(n)))
    return path


def run(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, list(args), env=env)


@pytest.fixture
def baseline(tmp_path):
    """The 8x8x8 dot: 2·8·8·8 = 1024 FLOPs; peak 3 x 256 B = 768 B."""
    path = tmp_path / "baseline.json"
    result = run("snapshot", str(write_dot(tmp_path, 8)), "-o", str(path))
    assert result.exit_code == 0, result.output
    return path


def test_snapshot_holds_the_known_figures(baseline) -> None:
    data = json.loads(baseline.read_text())
    assert data["schema"] == "hloscope/snapshot/v1"
    assert data["metrics"]["total_flops"] == 2 * 8 * 8 * 8
    assert data["metrics"]["peak_bytes"] == 3 * 8 * 8 * 4
    assert set(data["toolchain"]) == {"jax", "jaxlib", "libtpu", "backend", "xla_flags"}


def test_snapshot_is_not_overwritten_without_force(baseline, tmp_path) -> None:
    result = run("snapshot", str(write_dot(tmp_path, 8)), "-o", str(baseline))
    assert result.exit_code == 2 and "--force" in result.output


@pytest.mark.parametrize("allowed, code", [("25%", 0), ("24.9%", 1)])
def test_flops_threshold_boundary(baseline, tmp_path, allowed, code) -> None:
    """The 8x8x10 dot has 2·8·8·10 = 1280 FLOPs: +25.0% exactly."""
    current = write_dot(tmp_path, 10)
    result = run("check", str(current), "--baseline", str(baseline),
                 "--max-flops-increase", allowed)
    assert result.exit_code == code, result.output
    assert ("failed: 1 violation" in result.output) == (code == 1)


@pytest.mark.parametrize("limit, code", [("896", 0), ("895", 1)])
def test_peak_limit_boundary(baseline, tmp_path, limit, code) -> None:
    """Peak of the 8x8x10 dot: 256 + 320 + 320 = 896 bytes."""
    result = run("check", str(write_dot(tmp_path, 10)), "--baseline", str(baseline),
                 "--max-peak", limit)
    assert result.exit_code == code, result.output


@pytest.mark.parametrize("allowed, code", [("128", 0), ("127", 1), ("16.67%", 0), ("16.66%", 1)])
def test_peak_increase_boundary(baseline, tmp_path, allowed, code) -> None:
    """768 -> 896 bytes: +128 B, +16.666...%."""
    result = run("check", str(write_dot(tmp_path, 10)), "--baseline", str(baseline),
                 "--max-peak-increase", allowed)
    assert result.exit_code == code, result.output


def test_markdown_goes_to_the_step_summary(baseline, tmp_path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier\n")
    result = run("check", str(write_dot(tmp_path, 10)), "--baseline", str(baseline),
                 "--max-flops-increase", "1%", "--format", "markdown",
                 env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == 1
    written = summary.read_text()
    assert written.startswith("earlier\n") and "total_flops" in written and "|" in written


def test_update_rewrites_the_baseline(baseline, tmp_path) -> None:
    result = run("check", str(write_dot(tmp_path, 10)), "--baseline", str(baseline), "--update")
    assert result.exit_code == 0
    assert json.loads(baseline.read_text())["metrics"]["total_flops"] == 1280
    again = run("check", str(write_dot(tmp_path, 10)), "--baseline", str(baseline),
                "--max-flops-increase", "0%")
    assert again.exit_code == 0


def test_identical_output_across_runs(baseline, tmp_path) -> None:
    args = ("check", str(write_dot(tmp_path, 10)), "--baseline", str(baseline),
            "--max-flops-increase", "1%", "--format", "json")
    assert run(*args).output == run(*args).output


@pytest.mark.parametrize("content, message", [
    ("{not json", "bad.json:1:2: error: not a readable baseline"),
    ('{"schema": "other"}', "not an hloscope snapshot"),
    ('{"schema": "hloscope/snapshot/v1", "metrics": {"peak_bytes": 1.5}}', "integers or null"),
])
def test_corrupt_baseline_is_malformed_input(tmp_path, content, message) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    result = run("check", str(write_dot(tmp_path, 8)), "--baseline", str(bad))
    assert result.exit_code == 4 and message in result.output
    assert "Traceback" not in result.output


def test_bad_threshold_and_missing_inputs(baseline, tmp_path) -> None:
    current = str(write_dot(tmp_path, 8))
    bad = run("check", current, "--baseline", str(baseline), "--max-peak-increase", "lots")
    assert bad.exit_code == 2
    missing = run("check", str(tmp_path / "nope.hlo"), "--baseline", str(baseline))
    assert missing.exit_code == 3
    no_baseline = run("check", current, "--baseline", str(tmp_path / "none.json"))
    assert no_baseline.exit_code == 3 and "hloscope snapshot" in no_baseline.output


def test_unscheduled_module_has_memory_na(tmp_path) -> None:
    path = tmp_path / "u.hlo"
    path.write_text(DOT.replace("COLS", "8").replace(", is_scheduled=true", ""))
    result = run("compare", str(path), str(path))
    assert result.exit_code == 0, result.output
    assert "n/a" in result.output and "not scheduled" in result.output


def test_toolchain_comes_from_a_build_manifest(tmp_path) -> None:
    """A `hloscope build` folder: XLA's dump in dump/, the versions in manifest.json."""
    import shutil

    from conftest import FIXTURES

    shutil.copytree(FIXTURES / "cpu" / "remat-full", tmp_path / "build" / "dump")
    versions = {"jax": "0.10.2", "jaxlib": "0.10.2", "libtpu": None}
    (tmp_path / "build" / "manifest.json").write_text(json.dumps(
        {"schema": "hloscope/build-manifest/v1", "key_material": {"versions": versions}}))
    out = tmp_path / "snapshot.json"
    result = run("snapshot", str(tmp_path / "build"), "-o", str(out))
    assert result.exit_code == 0, result.output
    toolchain = json.loads(out.read_text())["toolchain"]
    assert (toolchain["jax"], toolchain["jaxlib"], toolchain["backend"]) == ("0.10.2", "0.10.2",
                                                                            "cpu")
