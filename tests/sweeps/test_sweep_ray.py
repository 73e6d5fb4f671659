"""`hloscope sweep --executor ray` on a Ray cluster started here (2 CPUs): the same verdicts as
the local executor, builds gathered into the sweep folder, a killed task retried; and clear
errors when Ray is absent or the cluster cannot be reached.

Independent truths: the local executor's sweep of the same variants (XLA's CPU compile is
deterministic: the same optimized HLO bytes), Ray's own report of a dead worker
(WorkerCrashedError), and the exit codes of the error paths.
"""
from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from sweep_runs import rows_by_name, run_sweep_cli

from hloscope.errors import EXIT_INPUT_MISSING, EXIT_MISSING_DEPENDENCY
from hloscope.sweeps.faults import KILL_ATTEMPTS_ENV

COMPARED = ("outcome", "rank", "reason", "status", "fits", "batch", "fingerprint", "total_flops",
            "recompute_flops", "required_bytes", "live_peak_bytes")


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'hloscope[ray]'")
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=128 << 20,
             log_to_driver=False, logging_level="ERROR")
    yield ray
    ray.shutdown()


def hlo_digest(row: dict) -> str:
    return hashlib.sha256((Path(row["build_folder"]) / "optimized_hlo.txt").read_bytes()
                          ).hexdigest()


@pytest.mark.compile
def test_a_ray_sweep_ranks_like_the_local_one(ray_cluster, tmp_path: Path) -> None:
    policies = ("--policies", "none,full")
    local_code, local = run_sweep_cli(tmp_path, "local", *policies, "--cache-dir",
                                      str(tmp_path / "local-cache"))
    ray_code, remote = run_sweep_cli(tmp_path, "ray", *policies, "--executor", "ray",
                                     "--cache-dir", str(tmp_path / "ray-cache"))
    assert remote["executor"] == "ray" and remote["compiles"] == 2
    assert (ray_code, remote["winner"]) == (local_code, local["winner"])
    local_rows, ray_rows = rows_by_name(local), rows_by_name(remote)
    for name, row in ray_rows.items():
        assert {k: row[k] for k in COMPARED} == {k: local_rows[name][k] for k in COMPARED}
        folder = Path(row["build_folder"])  # gathered into the sweep folder
        assert folder == tmp_path / "ray" / "builds" / name and (folder / "dump").is_dir()
        assert hlo_digest(row) == hlo_digest(local_rows[name])


@pytest.mark.compile
def test_a_ray_task_whose_worker_is_killed_is_retried(ray_cluster, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KILL_ATTEMPTS_ENV, "1")
    code, document = run_sweep_cli(tmp_path, "out", "--policies", "dots_saveable", "--executor",
                                   "ray", "--cache-dir", str(tmp_path / "cache"))
    (row,) = document["variants"]
    assert code == 0 and document["retried"] == 1
    assert (row["status"], row["attempts"]) == ("ok", 2)
    assert row["lost_attempts"][0].startswith("WorkerCrashedError")  # Ray saw its worker die


def cli(*args: str, prelude: str = "") -> subprocess.CompletedProcess:
    code = f"{prelude}\nfrom hloscope.cli.main import main\nmain()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120, cwd=REPO)


SWEEP = ("sweep", "--model", "tiny", "--target", "cpu", "--policies", "none", "--no-cache")


def test_without_ray_the_executor_names_the_extra(tmp_path: Path) -> None:
    result = cli(*SWEEP, "-o", str(tmp_path / "out"), "--executor", "ray",
                 prelude="import sys; sys.modules['ray'] = None  # as if not installed")
    assert result.returncode == EXIT_MISSING_DEPENDENCY, result.stderr
    assert "pip install 'hloscope[ray]'" in result.stderr and "Traceback" not in result.stderr
    assert "compiling" not in result.stderr  # refused before the start line


@pytest.mark.parametrize("address", ["127.0.0.1:9", "ray://127.0.0.1:9"])
def test_an_unreachable_cluster_is_a_clear_error(tmp_path: Path, address: str) -> None:
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'hloscope[ray]'")
    result = cli(*SWEEP, "-o", str(tmp_path / "out"), "--executor", "ray", "--address", address)
    assert result.returncode == EXIT_INPUT_MISSING, result.stderr
    assert f"cannot reach the Ray cluster at {address}" in result.stderr
    assert "Traceback" not in result.stderr
