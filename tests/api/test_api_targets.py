"""The API's slice, mesh and flag keywords reach the request as the CLI's options do."""
from __future__ import annotations

from pathlib import Path

import pytest

import hloscope
from hloscope.api import sweep_request
from hloscope.errors import UsageError


def test_sweep_request_takes_slices_mesh_and_flags(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIBTPU_INIT_ARGS", "--xla_tpu_a=1")
    request = sweep_request(model="tiny", policies="full", target="tpu:v6e-128:slices=4",
                            cache=tmp_path, xla_flags=["xla_tpu_b=2"], fsdp=True,
                            ici_fsdp_parallel=64)
    assert request.target == "tpu:v6e:8x16:slices=4"
    assert request.flags.user == ("--xla_tpu_b=2",)
    assert request.flags.environment["LIBTPU_INIT_ARGS"] == "--xla_tpu_a=1"
    case = request.cases()[0]
    mesh = request.spec(case, 512).mesh()
    assert (mesh.dcn_data, mesh.ici_data, mesh.ici_fsdp) == (4, 2, 64)


def test_build_refuses_a_topology_that_is_no_slice(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="16x16"):
        hloscope.build(tmp_path / "b", "tiny", target="tpu:v6e:32x16")
    assert not (tmp_path / "b").exists()
