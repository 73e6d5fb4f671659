"""Shared test fixtures: where the corpus (../shared) and the committed fixtures live."""
from __future__ import annotations

import atexit
import csv
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from native_modes import parametrize, parser_mode  # noqa: F401  (the autouse fixture)

# JAX runs on the CPU in tests; TPU/GPU targets are compiled deviceless in subprocesses that
# inherit these (libtpu's metadata-server probes are switched off).
os.environ.setdefault("JAX_PLATFORMS", "cpu")
for _key, _value in {"TPU_SKIP_MDS_QUERY": "1", "TPU_ACCELERATOR_TYPE": "v5litepod-4",
                     "TPU_WORKER_HOSTNAMES": "localhost", "TPU_WORKER_ID": "0",
                     "ALLOW_MULTIPLE_LIBTPU_LOAD": "1"}.items():
    os.environ.setdefault(_key, _value)
# builds (`hloscope build` reads and writes the cache too) stay out of the user's ~/.cache
if "HLOSCOPE_CACHE_DIR" not in os.environ:
    os.environ["HLOSCOPE_CACHE_DIR"] = tempfile.mkdtemp(prefix="hloscope-test-cache-")
    atexit.register(shutil.rmtree, os.environ["HLOSCOPE_CACHE_DIR"], True)

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus"
FIXTURES = REPO / "fixtures"
ORACLES = REPO / "tests" / "oracles"


@dataclass(frozen=True)
class CorpusFile:
    path: Path
    modules: str
    scheduled: bool
    xla_parses: bool
    complete: bool

    @property
    def id(self) -> str:
        return self.path.name


def corpus_files() -> list[CorpusFile]:
    """The MANIFEST.tsv rows, or [] when ../shared is absent (see require_corpus)."""
    manifest = CORPUS / "MANIFEST.tsv"
    if not manifest.exists():
        return []
    with manifest.open() as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    return [
        CorpusFile(
            path=CORPUS / row["file"],
            modules=row["modules"],
            scheduled=row["scheduled"] == "yes",
            xla_parses=row["xla_0.10.2_parses"] == "yes",
            complete=row["complete"] == "yes",
        )
        for row in rows
    ]


def require_corpus() -> None:
    """Skips when ../shared/corpus is absent, except under CI=true where that is a failure."""
    if (CORPUS / "MANIFEST.tsv").exists():
        return
    message = f"the shared corpus is absent ({CORPUS}); it sits beside the repository as ../shared"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def corpus_params(complete: bool) -> list:
    files = [f for f in corpus_files() if f.complete == complete]
    if not files:
        return [pytest.param(None, id="corpus-absent")]
    return [pytest.param(f, id=f.id) for f in files]


def compile_dump_oracle(script: str, out: Path) -> tuple[Path, dict]:
    """Runs tests/oracles/`script` (it compiles JAX programs on the CPU with XLA's dumps on) in
    a child process: the dump folder and the programs' JSON account."""
    import json
    import subprocess
    import sys
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    subprocess.run([sys.executable, str(ORACLES / script), str(out / "dump"),
                    str(out / "programs.json")], check=True, env=env, capture_output=True,
                   timeout=300)
    return out / "dump", json.loads((out / "programs.json").read_text())


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize(metafunc)
