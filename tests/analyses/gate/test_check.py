"""`hloscope check` at its exact boundaries, with figures known by construction.

The remat pair (remat_pair.py): peak 28 KiB with h saved, 24 KiB with it recomputed; FLOPs 4096
and 5120; 0 and 1 remat instructions. Multiply modules: `f32[N] multiply(p, p)` costs N FLOPs
(XLA's HloCostAnalysis counts one per element), which gives figures like 100 -> 129 where a
float threshold would round the wrong way (0.29 * 100 = 28.999999999999996). Device budgets
are the measured usable HBM in docs/targets.md (v5e 15.75 GiB, v5p 95.74 GiB).

Also thresholds at their exact boundaries on hand-built
modules whose FLOPs (2·M·N·K for a dot) and peak (entry parameters live throughout, plus the
result) are known by construction; the step summary; the baseline's errors.
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import FIXTURES
from remat_pair import REMAT_FLOPS, REMAT_PEAK, SAVED_FLOPS, SAVED_PEAK, remat_text, saved_text

from hloscope.cli.main import cli

GIB = 1024 ** 3


def run(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, list(args), env=env)


def write(folder, name: str, text: str):
    path = folder / name
    path.write_text(text)
    return path


def multiply(folder, n: int, name: str | None = None):
    text = (f"HloModule m, is_scheduled=true\nENTRY main {{\n  p = f32[{n}] parameter(0)\n"
            f"  ROOT m = f32[{n}] multiply(p, p)\n}}\n")
    return write(folder, name or f"mul{n}.hlo", text)


def snapshot(source, out) -> None:
    result = run("snapshot", str(source), "-o", str(out))
    assert result.exit_code == 0, result.output


@pytest.fixture
def remat_baseline(tmp_path):
    """The baseline is the recomputing program; the program checked saves h instead."""
    path = tmp_path / "remat.json"
    snapshot(write(tmp_path, "remat.hlo", remat_text()), path)
    return path


def check(tmp_path, baseline, *options: str, current: str | None = None):
    source = current or str(write(tmp_path, "saved.hlo", saved_text()))
    return run("check", source, "--baseline", str(baseline), *options)


def test_the_baseline_holds_the_figures_known_by_construction(remat_baseline) -> None:
    metrics = json.loads(remat_baseline.read_text())["metrics"]
    assert (metrics["peak_bytes"], metrics["total_flops"]) == (REMAT_PEAK, REMAT_FLOPS)
    assert (metrics["recompute_flops"], metrics["remat_instructions"]) == (1024, 1)


@pytest.mark.parametrize("allowed, code", [
    (f"{SAVED_PEAK - REMAT_PEAK}", 0), (f"{SAVED_PEAK - REMAT_PEAK - 1}", 1),  # +4096 B
    ("4KiB", 0), ("16.67%", 0), ("16.66%", 1),  # 4096 / 24576 = 16.666...%
])
def test_peak_increase_boundary(tmp_path, remat_baseline, allowed, code) -> None:
    result = check(tmp_path, remat_baseline, "--max-peak-increase", allowed)
    assert result.exit_code == code, result.output


@pytest.mark.parametrize("limit, code", [(str(SAVED_PEAK), 0), (str(SAVED_PEAK - 1), 1),
                                         ("28KiB", 0)])
def test_peak_limit_boundary(tmp_path, remat_baseline, limit, code) -> None:
    assert check(tmp_path, remat_baseline, "--max-peak", limit).exit_code == code


def check_remat_against_saved(tmp_path, *options: str):
    """Saved as the baseline, recomputed as the program."""
    baseline = tmp_path / "saved.json"
    snapshot(write(tmp_path, "saved.hlo", saved_text()), baseline)
    current = str(write(tmp_path, "remat.hlo", remat_text()))
    return check(tmp_path, baseline, *options, current=current)


@pytest.mark.parametrize("allowed, code", [("0", 1), ("1", 0), ("2", 0)])
def test_remat_increase_boundary(tmp_path, allowed, code) -> None:
    """0 -> 1 JAX remat instruction."""
    result = check_remat_against_saved(tmp_path, "--max-remat-increase", allowed)
    assert result.exit_code == code, result.output


@pytest.mark.parametrize("allowed, code", [("25%", 0), ("24.99%", 1), ("1024", 0), ("1023", 1)])
def test_flops_increase_boundary(tmp_path, allowed, code) -> None:
    """4096 -> 5120 FLOPs: +1024, +25% exactly."""
    result = check_remat_against_saved(tmp_path, "--max-flops-increase", allowed)
    assert result.exit_code == code, result.output


@pytest.mark.parametrize("allowed, code", [("29%", 0), ("28.99%", 1), ("7%", 1)])
def test_percentages_are_exact(tmp_path, allowed, code) -> None:
    """100 -> 129 FLOPs is +29% exactly: within 29%, as a float threshold would not be."""
    baseline = tmp_path / "b.json"
    snapshot(multiply(tmp_path, 100), baseline)
    result = check(tmp_path, baseline, "--max-flops-increase", allowed,
                   current=str(multiply(tmp_path, 129)))
    assert result.exit_code == code, result.output


def test_violation_table_names_the_figure_and_both_values(tmp_path, remat_baseline) -> None:
    result = check(tmp_path, remat_baseline, "--max-peak-increase", "0", "--format", "json")
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["schema"] == "hloscope/check/v1" and data["passed"] is False
    assert data["violations"] == [{"metric": "peak_bytes", "baseline": REMAT_PEAK,
                                   "current": SAVED_PEAK, "rule": "increase <= 0 B"}]


def test_markdown_for_a_pull_request(tmp_path, remat_baseline) -> None:
    result = check(tmp_path, remat_baseline, "--max-peak-increase", "2%", "--format", "markdown")
    assert result.exit_code == 1
    assert "| peak_bytes" in result.output and "28.0 KiB" in result.output
    assert "24.0 KiB" in result.output and "failed: 1 violation" in result.output


def test_step_summary_is_appended_and_an_unwritable_one_does_not_change_the_verdict(
        tmp_path, remat_baseline) -> None:
    summary = write(tmp_path, "summary.md", "before\n")
    result = run("check", str(write(tmp_path, "s.hlo", saved_text())), "--baseline",
                 str(remat_baseline), "--max-peak-increase", "2%",
                 env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == 1
    assert summary.read_text().startswith("before\n# Check of") and "| peak_bytes" in \
        summary.read_text()
    broken = run("check", str(write(tmp_path, "s.hlo", saved_text())), "--baseline",
                 str(remat_baseline), "--max-peak-increase", "20%",
                 env={"GITHUB_STEP_SUMMARY": str(tmp_path / "no" / "such" / "dir.md")})
    assert broken.exit_code == 0 and "warning: cannot append" in broken.output


@pytest.mark.parametrize("device, code", [("v5e", 1), ("v5p", 0)])
def test_device_budget(tmp_path, device, code) -> None:
    """f32[2^32] parameter and product: 2 x 16 GiB live = 32 GiB: over v5e's 15.75 GiB of usable
    HBM, within v5p's 95.74 GiB. The baseline is the same program (no regression)."""
    big = multiply(tmp_path, 2 ** 32, "big.hlo")
    baseline = tmp_path / "big.json"
    snapshot(big, baseline)
    result = run("check", str(big), "--baseline", str(baseline), "--device", device,
                 "--format", "json")
    assert result.exit_code == code, result.output
    figures = json.loads(result.output)["figures"]
    assert figures["memory_bytes"]["current"] == 32 * GIB
    assert figures["step_ms"]["current"] > 0


def test_step_time_increase(tmp_path) -> None:
    baseline = tmp_path / "b.json"
    snapshot(multiply(tmp_path, 1000), baseline)
    slower = str(multiply(tmp_path, 2000))
    assert run("check", slower, "--baseline", str(baseline), "--device", "v5e",
               "--max-step-time-increase", "99%").exit_code == 1
    assert run("check", slower, "--baseline", str(baseline), "--device", "v5e",
               "--max-step-time-increase", "101%").exit_code == 0
    no_device = run("check", slower, "--baseline", str(baseline),
                    "--max-step-time-increase", "5%")
    assert no_device.exit_code == 2 and "--device" in no_device.output


def build_folder(root, name: str, jax_version: str):
    """A `hloscope build` folder: XLA's dump in dump/, the versions in manifest.json."""
    import shutil

    folder = root / name
    shutil.copytree(FIXTURES / "cpu" / "remat-none", folder / "dump")
    manifest = {"schema": "hloscope/build-manifest/v1", "key_material": {
        "versions": {"python": "3.11.7", "jax": jax_version, "jaxlib": jax_version},
        "compiler_options": {"xla_dump_to": "/tmp/x", "xla_cpu_enable_fast_math": False}}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_a_toolchain_change_is_said_beside_the_violations(tmp_path) -> None:
    old, new = build_folder(tmp_path, "old", "0.9.0"), build_folder(tmp_path, "new", "0.10.2")
    baseline = tmp_path / "old.json"
    snapshot(old, baseline)
    toolchain = json.loads(baseline.read_text())["toolchain"]
    assert toolchain == {"backend": "cpu", "jax": "0.9.0", "jaxlib": "0.9.0", "libtpu": None,
                         "xla_flags": "--xla_cpu_enable_fast_math=false"}
    result = run("check", str(new), "--baseline", str(baseline), "--max-peak-increase", "0")
    assert result.exit_code == 0, result.output
    assert "jax 0.9.0 -> 0.10.2" in result.output and "--update" in result.output
    same = run("check", str(old), "--baseline", str(baseline), "--max-peak-increase", "0")
    assert same.exit_code == 0 and "toolchain" not in same.output.replace("toolchain_", "")


def test_unscheduled_module_memory_is_not_checked_and_says_why(tmp_path) -> None:
    text = saved_text().replace(", is_scheduled=true", "")
    unscheduled = write(tmp_path, "before.hlo", text)
    baseline = tmp_path / "u.json"
    snapshot(unscheduled, baseline)
    data = json.loads(baseline.read_text())
    assert data["metrics"]["peak_bytes"] is None and data["metrics"]["total_flops"] == SAVED_FLOPS
    result = check(tmp_path, baseline, "--max-peak-increase", "0", "--max-flops-increase", "0",
                   current=str(unscheduled))
    assert result.exit_code == 0, result.output
    assert "peak_bytes not checked" in result.output and "not scheduled" in result.output


def test_snapshot_is_sorted_integer_json_identical_across_runs(tmp_path) -> None:
    source = write(tmp_path, "saved.hlo", saved_text())
    first, second = run("snapshot", str(source), "--format", "json"), run(
        "snapshot", str(source), "--format", "json")
    assert first.exit_code == 0 and first.output == second.output
    data = json.loads(first.output)
    assert list(data) == ["schema", "metrics", "module", "notes", "toolchain"]
    for section in ("metrics", "toolchain"):
        assert list(data[section]) == sorted(data[section])
    # XLA's allocation is unknown without XLA's dump files: null, never a guess
    assert data["metrics"].pop("allocation_bytes") is None
    assert all(type(value) is int for value in data["metrics"].values())
    assert data["metrics"]["peak_bytes"] == SAVED_PEAK
    assert data["toolchain"] == {"backend": None, "jax": None, "jaxlib": None, "libtpu": None,
                                 "xla_flags": None}


def test_update_rewrites_the_baseline_then_passes(tmp_path, remat_baseline) -> None:
    assert check(tmp_path, remat_baseline, "--max-peak-increase", "0").exit_code == 1
    assert check(tmp_path, remat_baseline, "--update").exit_code == 0
    assert json.loads(remat_baseline.read_text())["metrics"]["peak_bytes"] == SAVED_PEAK
    assert check(tmp_path, remat_baseline, "--max-peak-increase", "0").exit_code == 0


@pytest.mark.parametrize("options", [("--max-peak-increase", "lots"),
                                     ("--max-peak-increase", "-2%"),
                                     ("--max-peak", "5%"),
                                     ("--max-remat-increase", "-1"),
                                     ("--device", "no-such-chip")])
def test_bad_thresholds_are_usage_errors(tmp_path, remat_baseline, options) -> None:
    result = check(tmp_path, remat_baseline, *options)
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_missing_and_malformed_inputs(tmp_path, remat_baseline) -> None:
    missing = check(tmp_path, remat_baseline, current=str(tmp_path / "nope.hlo"))
    assert missing.exit_code == 3
    garbled = write(tmp_path, "bad.hlo", "HloModule m\nENTRY main {\n  p = f32[4 parameter(0)\n}\n")
    malformed = check(tmp_path, remat_baseline, current=str(garbled))
    assert malformed.exit_code == 4 and "bad.hlo:3:" in malformed.output


# --- an 8x8xN dot: FLOPs 2·8·8·N and peak known by construction -----------------------------

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
def test_dot_peak_limit_boundary(baseline, tmp_path, limit, code) -> None:
    """Peak of the 8x8x10 dot: 256 + 320 + 320 = 896 bytes."""
    result = run("check", str(write_dot(tmp_path, 10)), "--baseline", str(baseline),
                 "--max-peak", limit)
    assert result.exit_code == code, result.output


@pytest.mark.parametrize("allowed, code", [("128", 0), ("127", 1), ("16.67%", 0), ("16.66%", 1)])
def test_dot_peak_increase_boundary(baseline, tmp_path, allowed, code) -> None:
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
