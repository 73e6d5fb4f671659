"""The text-only TPU fit verdict against libtpu's own, on programs of other families, generations
and meshes than the built-in model's (benchmarks/tpu_families.py; issue 37, item 3).

Each program is compiled deviceless in a child process with XLA's dumps on; libtpu's verdict is
the compile's status (RESOURCE_EXHAUSTED or not) and its figure the buffer assignment's HBM total
(every color-0 allocation), which its RESOURCE_EXHAUSTED message states. hloscope's verdict is
made from the after-optimizations text alone (`required_figure` with no dump or log) against the
device table's usable HBM. The default suite compiles one MoE program on v5p that fits and one
libtpu refuses (it refuses before code generation: seconds); the slow test adds a conv net with
batch norm on v5e, Megatron tensor parallelism on a 4x4 mesh of v5e 4x4 and nested scans on v4.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest
from conftest import REPO

pytestmark = pytest.mark.compile
TOLERANCE = 0.02
SCRIPT = REPO / "benchmarks" / "tpu_families.py"


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    if importlib.util.find_spec("libtpu") is None:
        pytest.skip("libtpu is not installed: no deviceless TPU compile")
    cache = tmp_path_factory.mktemp("families")
    sys.path.insert(0, str(SCRIPT.parent))
    import tpu_families

    tpu_families.CACHE = cache

    def compile_programs(*programs: str):
        subprocess.run([sys.executable, str(SCRIPT), "compile", *programs], check=True,
                       env={**os.environ, "HLOSCOPE_FAMILIES_CACHE": str(cache)},
                       capture_output=True, timeout=1800)
        by_name = {f.name: f for f in tpu_families.FAMILIES}
        return [tpu_families.read_program(by_name[name], int(k))
                for name, k in (p.split(":") for p in programs)]
    compile_programs.module = tpu_families  # type: ignore[attr-defined]
    yield compile_programs
    sys.path.remove(str(SCRIPT.parent))


def check(row, tpu_families) -> None:
    assert row.status in ("ok", "oom"), row
    assert row.ba_total is not None, row
    assert abs(row.estimate / row.ba_total - 1) < TOLERANCE, (row.name, row.estimate, row.ba_total)
    assert row.estimate_fits == (row.status == "ok"), row
    if row.status == "oom":
        # libtpu's message prints two decimals of G (T from 1 TiB): its figure is the buffer
        # assignment's HBM total
        assert row.stated is not None
        assert abs(row.stated - row.ba_total) <= tpu_families.printed_precision(row.stated), row


def test_moe_on_v5p_fits_and_refused_as_libtpu_says(families) -> None:
    fits, refused = families("moe_top2:1", "moe_top2:1336")
    assert (fits.status, refused.status) == ("ok", "oom")
    check(fits, families.module)
    check(refused, families.module)


@pytest.mark.slow
def test_conv_net_tensor_parallel_and_nested_scans(families) -> None:
    for row in families("resnet_bn:1", "megatron_tp:1", "nested_scans:1"):
        check(row, families.module)
