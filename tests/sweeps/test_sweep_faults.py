"""A sweep survives workers that die: a SIGKILLed worker's compile is retried, one that keeps
dying is reported failed with its log, and Ctrl-C stops every compile; a re-run resumes from the
cache.

The kills are real: `HLOSCOPE_KILL_ATTEMPTS=N` makes the first N attempts' workers SIGKILL
themselves while their compile child runs. Independent truths: the kernel's account of each
worker's death (its exit signal), the process table (no process of the sweep's session, and no
compile child, outlives it), and the cache entries counted on disk.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO
from sweep_runs import TINY_CPU, cache_entries, processes_mentioning, rows_by_name, run_sweep_cli

from hloscope.sweeps.faults import KILL_ATTEMPTS_ENV


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A TMPDIR for the workers: their compile children's command lines name it."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    return folder


@pytest.mark.compile
def test_a_killed_worker_is_retried_and_the_sweep_goes_on(
        tmp_path: Path, scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KILL_ATTEMPTS_ENV, "1")
    code, document = run_sweep_cli(tmp_path, "out", "--policies", "none,full", "--cache-dir",
                                   str(tmp_path / "cache"))
    rows = rows_by_name(document)
    assert code == 0 and document["retried"] == 2 and document["compiles"] == 2
    for row in rows.values():
        assert row["status"] == "ok" and row["attempts"] == 2
        assert row["lost_attempts"] == ["worker process died: killed by SIGKILL"]
    assert cache_entries(tmp_path / "cache") == 2
    assert processes_mentioning(str(scratch)) == []  # the killed workers' compiles died too


@pytest.mark.compile
def test_a_compile_that_keeps_dying_is_reported_failed_with_its_log(
        tmp_path: Path, scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KILL_ATTEMPTS_ENV, "9")
    code, document = run_sweep_cli(tmp_path, "out", "--policies", "none", "--retries", "1",
                                   "--cache-dir", str(tmp_path / "cache"))
    (row,) = document["variants"]
    assert code == 1 and document["winner"] is None and document["compiles"] == 1
    assert (row["status"], row["outcome"], row["attempts"]) == ("crash", "failed", 2)
    assert len(row["lost_attempts"]) == 1 and "SIGKILL" in row["error"]
    assert Path(row["log"]).is_file() and Path(row["log"]).parent == tmp_path / "out/builds/none"
    assert cache_entries(tmp_path / "cache") == 0  # a crash is never cached


def session_members(session: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == session and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.compile
def test_ctrl_c_stops_every_compile_and_a_rerun_resumes_from_the_cache(
        tmp_path: Path, scratch: Path) -> None:
    cache = tmp_path / "cache"
    policies = ("--policies", "none,full,dots_saveable", "--cache-dir", str(cache))
    command = [sys.executable, str(REPO / "cli.py"), "sweep", *TINY_CPU, *policies, "--jobs",
               "1", "-o", str(tmp_path / "first")]
    sweep = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             start_new_session=True,  # like a terminal's foreground job
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        compiling = wait_for(lambda: sweep.poll() is not None or (
            cache_entries(cache) >= 1 and processes_mentioning(str(scratch))), 180)
        assert sweep.poll() is None, sweep.stderr.read()
        assert compiling, "no compile started in time"
        os.killpg(sweep.pid, signal.SIGINT)  # what Ctrl-C sends to the foreground job
        assert sweep.wait(60) == 130
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, signal.SIGKILL)
    assert wait_for(lambda: not session_members(sweep.pid), 10), session_members(sweep.pid)
    done = cache_entries(cache)
    assert 1 <= done < 3
    code, document = run_sweep_cli(tmp_path, "again", *policies)
    assert code == 0 and document["cache_hits"] == done and document["compiles"] == 3 - done
