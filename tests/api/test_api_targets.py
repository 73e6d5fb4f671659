"""The API's target (a Target or its string, slices included), mesh and flag keywords reach
the request as the CLI's options do; the request is keyword-only, refuses settings that do not
go together, and is what the CLI's sweep runs."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import hloscope
from hloscope.api import sweep_request
from hloscope.cli.main import cli
from hloscope.configs.targets import Target, parse_target
from hloscope.errors import UsageError
from hloscope.sweeps.core import FrontierOptions, SweepRequest
from hloscope.sweeps.frontier import FrontierResult


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


def test_a_target_object_and_its_string_make_the_same_request(tmp_path: Path) -> None:
    given = Target("tpu", "v6e", "8x16", num_slices=4)
    request = sweep_request(model="tiny", policies="full", target=given, cache=tmp_path)
    assert request.target == "tpu:v6e:8x16:slices=4"
    assert request.data_parallel == 4 * 8 * 16  # every chip of the 4 slices splits the batch
    by_text = hloscope.policies("tiny", target="tpu:v5e:2x2").to_dict()
    assert hloscope.policies("tiny", target=parse_target("tpu:v5e:2x2")).to_dict() == by_text


def test_a_frontier_request_compiles_full_and_keeps_its_settings(tmp_path: Path) -> None:
    request = sweep_request(model="tiny", policies="none,offload_carries", target="cpu",
                            cache=tmp_path, search="frontier", capacity=1 << 30,
                            names="qkv, mlp_hidden")
    assert [variant.name for variant in request.variants] == ["full"]
    assert request.frontier == FrontierOptions(capacity=1 << 30, names=("qkv", "mlp_hidden"))
    assert not request.search_batch and request.measure == 0


@pytest.mark.parametrize(("options", "says"), [
    ({"search": "grid"}, "'batch' or 'frontier'"),
    ({"search": "frontier", "measure": 2}, "measure"),
    ({"search": "batch", "measure": 2}, "measure"),
    ({"capacity": 1 << 30}, "go with search='frontier'"),
    ({"names": ["qkv"]}, "go with search='frontier'"),
])
def test_sweep_request_refuses_settings_that_do_not_go_together(tmp_path: Path, options: dict,
                                                                says: str) -> None:
    with pytest.raises(UsageError, match=says):
        sweep_request(model="tiny", target="cpu", cache=tmp_path, **options)
    with pytest.raises(TypeError):
        sweep_request("tiny", "full")  # type: ignore[misc]  # keyword-only


def test_the_cli_sweep_runs_the_request_the_api_makes(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[SweepRequest] = []

    def run(request: SweepRequest, force: bool = False, *rest: object) -> FrontierResult:
        made.append(request)
        return FrontierResult(1 << 30, (8,), ("qkv",), [], compiles=0, candidates=3)

    monkeypatch.setattr("hloscope.cli.sweep.run_sweep", run)
    result = CliRunner().invoke(cli, [
        "sweep", "--model", "tiny", "--target", "tpu:v5e-4", "--seq", "64", "--batch", "8",
        "--search", "frontier", "--capacity", "1GiB", "--names", "qkv", "--no-cache",
        "-o", str(tmp_path / "f")])
    assert result.exit_code == 1, result.output  # nothing fits: the hand-made result's rows
    (request,) = made
    assert request.target == "tpu:v5e:2x2" and request.out_dir == tmp_path / "f"
    assert request.frontier == FrontierOptions(capacity=1 << 30, names=("qkv",))
    assert [variant.name for variant in request.variants] == ["full"]
