"""The shared build cache: damaged entries are detected and compiled again, concurrent writers of
one key leave one intact entry, and builds travel back packed from workers that do not share the
driver's files.

Independent truths: SHA-256 of the files a real compile wrote (XLA's CPU compile of one program
is deterministic, so a recompile writes the same bytes), the number of compiles and entries
counted on disk, and the entry the file system holds after concurrent renames.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from hloscope.cli.main import cli
from hloscope.configs.policies import parse_variant
from hloscope.configs.presets import preset_config
from hloscope.sweeps.tasks import CompileTask, receive, run_task
from hloscope.workloads.build import BuildSpec
from hloscope.workloads.cache import BuildCache
from hloscope.workloads.seal import SEAL, folder_files, seal_problem


def tiny_spec(policy: str = "none") -> BuildSpec:
    config = preset_config("tiny")
    return BuildSpec("tiny", policy, "cpu", parse_variant(policy, config).apply(config))


def digests(folder: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256((folder / p).read_bytes()).hexdigest()
            for p in folder_files(folder)}


@pytest.fixture(scope="module")
def cached(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, BuildSpec, dict[str, str]]:
    """A cache holding one real CPU build, and the hashes of the files the compile wrote."""
    root = tmp_path_factory.mktemp("cache")
    spec = tiny_spec()
    build, hit = BuildCache(root).build(spec, timeout=600)
    assert not hit and build.manifest["status"] == "ok"
    return root, spec, digests(build.folder)


def copy_cache(cached: tuple[Path, BuildSpec, dict[str, str]], tmp_path: Path) -> BuildCache:
    shutil.copytree(cached[0], tmp_path / "cache")
    return BuildCache(tmp_path / "cache")


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip_byte(path: Path) -> None:  # same size: only the content hash can tell
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


DAMAGE = {
    "truncated hlo": lambda entry: _truncate(entry / "optimized_hlo.txt"),
    "altered dump file": lambda entry: _flip_byte(next((entry / "dump").glob(
        "*cpu_after_optimizations-buffer-assignment.txt"))),
    "missing manifest": lambda entry: (entry / "manifest.json").unlink(),
    "no completeness marker": lambda entry: (entry / SEAL).unlink(),
    "marker of another key": lambda entry: (entry / SEAL).write_text(
        (entry / SEAL).read_text().replace('"key": "', '"key": "x')),
}


@pytest.mark.compile
@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_entry_is_never_trusted(cached, tmp_path: Path, damage: str) -> None:
    cache = copy_cache(cached, tmp_path)
    key = cached[1].cache_key()
    assert cache.lookup(cached[1]) is not None  # intact before
    DAMAGE[damage](cache.entry(key))
    assert cache.lookup(cached[1]) is None
    assert not cache.entry(key).exists()  # moved aside with the reason, for inspection
    (aside,) = (cache.root / "corrupt").iterdir()
    assert (aside / "REASON.txt").read_text().strip()


@pytest.mark.compile
def test_a_sweep_recompiles_a_truncated_entry_to_the_same_bytes(cached, tmp_path: Path) -> None:
    cache = copy_cache(cached, tmp_path)
    entry = cache.entry(cached[1].cache_key())
    _truncate(entry / "optimized_hlo.txt")
    result = CliRunner().invoke(cli, ["sweep", "--model", "tiny", "--target", "cpu",
                                      "--policies", "none", "--cache-dir", str(cache.root),
                                      "--format", "json"], catch_exceptions=False)
    document = json.loads(result.output[result.output.index("{"):])
    assert document["compiles"] == 1 and document["cache_hits"] == 0
    assert seal_problem(entry, cached[1].cache_key()) is None
    restored = digests(entry)
    assert restored["optimized_hlo.txt"] == cached[2]["optimized_hlo.txt"]
    assert len(list((cache.root / "corrupt").iterdir())) == 1


@pytest.mark.compile
def test_concurrent_writers_of_one_key_leave_one_intact_entry(cached, tmp_path: Path) -> None:
    cache = copy_cache(cached, tmp_path)
    key = cached[1].cache_key()
    entry = cache.entry(key)
    stagings = [cache.staging(key, f"writer{i}") for i in range(4)]
    for staging in stagings:
        shutil.copytree(entry, staging)
    _truncate(entry / "optimized_hlo.txt")  # the writers also find a damaged entry in place
    barrier = threading.Barrier(len(stagings))
    folders: list[Path] = []

    def publish(staging: Path) -> None:
        barrier.wait()
        folders.append(cache.publish(key, staging).folder)

    threads = [threading.Thread(target=publish, args=(s,)) for s in stagings]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert folders == [entry] * len(stagings)
    assert seal_problem(entry, key) is None and digests(entry) == cached[2]
    assert not any(staging.exists() for staging in stagings)
    assert [p.name for p in (cache.root / "builds").iterdir()] == [key]


@pytest.mark.compile
def test_a_worker_without_the_drivers_files_sends_the_build_back(cached, tmp_path: Path) -> None:
    worker_root = cached[0]  # the worker's own copy of the cache path holds the build
    task = CompileTask("none", cached[1], str(worker_root), None, 600.0, "a1",
                       probe=str(tmp_path / "probe-the-worker-cannot-see"))
    outcome = run_task(task)
    assert outcome.cache_hit and outcome.archive is not None
    driver = BuildCache(tmp_path / "driver-cache")
    received = receive(dataclasses.replace(task, cache_root=str(driver.root)), outcome)
    assert received.archive is None and Path(received.folder) == driver.entry(task.spec.cache_key())
    assert digests(Path(received.folder)) == cached[2]


@pytest.mark.compile
def test_hloscope_build_reads_and_writes_the_same_cache(cached, tmp_path: Path) -> None:
    cache = copy_cache(cached, tmp_path)

    def build(name: str, *extra: str) -> dict:
        result = CliRunner().invoke(cli, ["build", "--model", "tiny", "--target", "cpu",
                                          "--cache-dir", str(cache.root), "-o",
                                          str(tmp_path / name), "--format", "json", *extra],
                                    catch_exceptions=False)
        return json.loads(result.output[result.output.index("{"):])

    assert build("hit")["cache_hit"] is True
    assert digests(tmp_path / "hit") == cached[2]  # the entry's files, the compile's bytes
    assert build("again", "--no-cache")["cache_hit"] is False
    assert (digests(tmp_path / "again")["optimized_hlo.txt"]
            == cached[2]["optimized_hlo.txt"])
    assert [p.name for p in (cache.root / "builds").iterdir()] == [cached[1].cache_key()]
