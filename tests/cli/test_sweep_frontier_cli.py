"""`hloscope sweep --search frontier`'s refusals (exit 2, a message, no compile) and the
frontier plot drawn from a hand-built result (no compile)."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import hloscope
from hloscope.cli.main import cli
from hloscope.errors import UsageError
from hloscope.reports.renderers.frontier_plot import frontier_svg, plot_frontier
from hloscope.sweeps.frontier import FrontierResult

FRONTIER = ["sweep", "--model", "tiny", "--target", "cpu", "--seq", "64", "--batch", "8",
            "--search", "frontier"]


def _run(*extra: str):
    return CliRunner().invoke(cli, [*FRONTIER, *extra])


def test_no_capacity_on_a_device_without_one_is_refused():
    result = _run()
    assert result.exit_code == 2
    assert "--capacity" in result.output and "Traceback" not in result.output


def test_step_frontier_without_batch_and_seq_is_refused_before_tracing(tmp_path: Path):
    step = tmp_path / "step.py"
    step.write_text("def make_step(remat):\n    raise AssertionError('not called')\n")
    result = CliRunner().invoke(cli, ["sweep", "--step", f"{step}:make_step", "--target", "cpu",
                                      "--search", "frontier", "--capacity", "1GiB"])
    assert result.exit_code == 2
    assert "--batch and --seq" in result.output
    assert "not called" not in result.output and "Traceback" not in result.output


def test_unknown_name_is_refused_with_the_valid_ones():
    result = _run("--capacity", "1GiB", "--names", "qkv,nope")
    assert result.exit_code == 2
    assert "'nope'" in result.output
    for name in ("qkv", "attn_out", "mlp_hidden"):  # the tiny block's names
        assert name in result.output


def test_unknown_choice_is_refused():
    result = _run("--capacity", "1GiB", "--choices", "device,disk")
    assert result.exit_code == 2 and "'disk'" in result.output


def test_frontier_options_without_frontier_are_refused():
    result = CliRunner().invoke(cli, ["sweep", "--model", "tiny", "--target", "cpu",
                                      "--names", "qkv"])
    assert result.exit_code == 2 and "--search frontier" in result.output


def test_bad_plot_suffix_is_refused_before_compiling(tmp_path: Path):
    result = _run("--capacity", "1GiB", "--plot", str(tmp_path / "f.gif"))
    assert result.exit_code == 2 and ".png" in result.output


def test_api_refuses_unknown_names_and_a_missing_capacity():
    with pytest.raises(UsageError, match="valid: norm1, qkv"):
        hloscope.sweep(model="tiny", target="cpu", search="frontier", capacity=1 << 30,
                       names=["qkv", "nope"], cache=None, output=None)
    with pytest.raises(UsageError, match="--capacity"):
        hloscope.sweep(model="tiny", target="cpu", search="frontier")


def _row(batch: int, choices: dict, compiled: int | None, chosen: bool = False) -> dict:
    return {"batch": batch, "policy": "names:" + ",".join(f"{k}={v}" for k, v in choices.items()),
            "choices": choices, "status": "predicted" if compiled is None else "compiled",
            "chosen": chosen, "predicted_bytes": 90 << 20, "compiled_bytes": compiled,
            "prediction_error": None, "predicted_step_s": 0.5, "fits": True,
            "predicted_tokens_per_s": 1000.0 * batch}


HAND = FrontierResult(100 << 20, (4, 8), ("qkv", "mlp_hidden"), [
    _row(4, {"qkv": "remat", "mlp_hidden": "remat"}, 80 << 20),
    _row(4, {"qkv": "device", "mlp_hidden": "remat"}, 95 << 20, chosen=True),
    _row(8, {"qkv": "offload", "mlp_hidden": "remat"}, None, chosen=True)], 3, 18)


def test_frontier_svg_has_the_families_the_capacity_and_both_kinds_of_points():
    svg = frontier_svg(HAND.to_dict())
    for gid in ("all recomputed", "some kept on device", "some offloaded", "winners",
                "capacity", "predicted", "compiled"):
        assert f'id="{gid}' in svg.replace(" ", "_") or f'id="{gid}"' in svg, gid
    assert "kept and offloaded" not in svg  # no row of that family


def test_plot_file_and_notebook_view(tmp_path: Path):
    plot_frontier(HAND.to_dict(), tmp_path / "frontier.png")
    assert (tmp_path / "frontier.png").read_bytes()[:4] == b"\x89PNG"
    view = HAND._repr_html_()
    assert "<svg" in view and "<table" in view and "Per-tensor policy frontier" in view
