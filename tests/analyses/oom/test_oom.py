"""`hloscope oom` on committed dumps, against XLA's own figures and closed forms.

Truths: libtpu's OOM message and memory-usage report of a real OOM compile
(fixtures/tpu-v5e-2x2-oom, fixtures/make_oom_fixture.py), memory_analysis() and the live-range
dump of a deviceless H100 compile (fixtures/gpu-h100-1x1x8), the parameter count's closed form,
and the residuals JAX itself says a block saves (`saved_residuals`).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from hloscope.analyses.oom.analytic import (
    activation_bytes,
    activation_bytes_none,
    state_bytes_per_parameter,
)
from hloscope.cli.main import cli
from hloscope.configs.config import param_count
from hloscope.configs.presets import preset_config
from hloscope.devices import GIB, JAX_DEFAULT_GPU_MEMORY_FRACTION, get_device
from tests.conftest import FIXTURES

OOM = FIXTURES / "tpu-v5e-2x2-oom"
GPU = FIXTURES / "gpu-h100-1x1x8" / "remat-none"


def run(*args: str, stdin: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), input=stdin, prog_name="hloscope")
    return result.exit_code, result.output


def oom_json(*args: str, stdin: str | None = None) -> tuple[int, dict]:
    code, output = run("oom", *args, "--format", "json", stdin=stdin)
    return code, json.loads(output)


def xla_default_space_total(folder: Path) -> int:
    report = next(folder.glob("*-memory-usage-report.txt")).read_text()
    match = re.search(r"Memory Space: default \(color=0\)\s*\nTotal bytes: (\d+)", report)
    assert match is not None
    return int(match.group(1))


def manifest() -> dict:
    return json.loads((OOM / "manifest.json").read_text())


def test_tpu_oom_totals_match_libtpu() -> None:
    code, data = oom_json(str(OOM))
    assert code == 1 and data["fits"] is False and data["schema"] == "hloscope/oom/v1"
    message = manifest()["error"]
    needed, available = re.search(r"temporaries \(([\d.]+)G\) exceeds available HBM "
                                  r"\(([\d.]+)G\)", message).groups()
    assert abs(data["peak_bytes"] / GIB - float(needed)) < 0.005
    assert data["peak_bytes"] == xla_default_space_total(OOM / "dump")
    assert data["capacity_bytes"] == round(float(available) * GIB)
    assert data["margin_bytes"] == data["capacity_bytes"] - data["peak_bytes"]
    assert data["compiler_verdict"] in message
    assert abs(data["live_peak_bytes"] - data["peak_bytes"]) < 0.01 * data["peak_bytes"]


def test_tpu_oom_breakdown_and_groups() -> None:
    _, data = oom_json(str(OOM))
    config = preset_config("tiny", **manifest()["config"])
    shares = {c["category"]: c for c in data["by_category"]}
    assert sum(c["bytes"] for c in data["by_category"]) == data["live_peak_bytes"]
    assert shares["saved activations"]["share"] > 0.8
    batch = config.batch // 4  # 4 devices on the data axis
    scores = config.n_layers * batch * config.n_heads * config.seq_len ** 2 * 4
    top = data["top_groups"][0]
    assert top["label"].startswith(f"{config.n_layers} layers x saved "
                                   f"[{batch},{config.n_heads},{config.seq_len},"
                                   f"{config.seq_len}] f32 attention scores")
    assert top["bytes"] == scores and top["layers"] == config.n_layers
    # with XLA's buffer sharing the peak is the moment XLA's buffer assignment holds the most
    # HBM (test_tpu_peak_moment_is_where_xla_holds_the_most_hbm): in the forward layer scan,
    # every layer's stacked residuals allocated and the current layer's scores being made
    assert data["peak"]["phase"] == "forward" and "while/body" in data["peak"]["op_name"]


def test_replicated_state_is_sixteen_bytes_per_parameter_less_gradients() -> None:
    _, data = oom_json(str(OOM))
    config = preset_config("tiny", **manifest()["config"])
    state = state_bytes_per_parameter(config)
    step_counter = 4  # the int32 step of the optimizer state
    expected = param_count(config) * (state.total - state.gradient) + step_counter
    assert data["sharding"]["replicated_state_bytes"] == expected
    assert data["sharding"]["partitions"] == 4


def test_remedies_listed_for_a_build_folder() -> None:
    _, data = oom_json(str(OOM))
    names = [r["name"] for r in data["remedies"]]
    assert {"remat:full", "remat:save_named", "remat:offload_named", "micro-batch:2",
            "fsdp"} <= set(names)
    assert [r["rank"] for r in data["remedies"]] == list(range(1, len(names) + 1))
    assert all(r["predicted_bytes"] < data["peak_bytes"] for r in data["remedies"])


def test_sweep_rows_become_compiled_facts(tmp_path: Path) -> None:
    rows = [{"variant": "full", "required_bytes": 123456789, "fits": True,
             "total_flops": None}, {"variant": "dots_saveable", "required_bytes": 1}]
    (tmp_path / "sweep.json").write_text(json.dumps({"variants": rows}))
    _, data = oom_json(str(OOM), "--sweep", str(tmp_path))
    full = next(r for r in data["remedies"] if r["name"] == "remat:full")
    assert full["compiled_bytes"] == 123456789 and full["compiled_fits"] is True
    assert any("dots_saveable" in note for note in data["notes"])


def test_new_remedies_attach_their_sweep_variants_with_the_error(tmp_path: Path) -> None:
    names = ["nested:2", "offload_carries", "dots_with_no_batch_dims_saveable"]
    rows = [{"variant": name, "required_bytes": 4_000_000_000, "fits": True} for name in names]
    (tmp_path / "sweep.json").write_text(json.dumps({"variants": rows}))
    _, data = oom_json(str(OOM), "--sweep", str(tmp_path))
    by_name = {r["name"]: r for r in data["remedies"]}
    for name in names:
        remedy = by_name[f"remat:{name}"]
        assert remedy["compiled_bytes"] == 4_000_000_000
        assert remedy["prediction_error"] == pytest.approx(
            remedy["predicted_bytes"] / 4_000_000_000 - 1)
    assert not any("without a remedy" in note for note in data["notes"])
    assert {"micro-batch:2", "micro-batch:4"} <= set(by_name)  # local batch 32: 2 fits
    _, text = run("oom", str(OOM), "--sweep", str(tmp_path), "--details")  # every column
    line = next(line for line in text.splitlines() if "remat:offload_carries" in line)
    error = by_name["remat:offload_carries"]["prediction_error"]
    assert f"{error * 100:.1f}%" in line and "error" in text


def test_gpu_compile_over_a_small_capacity() -> None:
    meta = json.loads((GPU / "meta.json").read_text())
    code, data = oom_json(str(GPU), "--capacity", "100MiB")
    assert code == 1 and data["fits"] is False
    assert data["peak_bytes"] == meta["memory"]["allocated_bytes"]
    assert data["peak_is_estimate"] is False
    code, data = oom_json(str(GPU), "--device", "h100")
    h100 = get_device("h100").usable_memory_bytes
    assert code == 0 and data["fits"] is True
    assert data["capacity_bytes"] == int(h100 * JAX_DEFAULT_GPU_MEMORY_FRACTION)


def test_gpu_text_alone_is_judged_on_its_estimated_allocation() -> None:
    """From the HLO text alone the verdict's figure is the allocation estimated from it (XLA's
    buffer assignment replayed), within 2% of XLA's (memory_analysis(), in meta.json), and
    above the live peak XLA's live-range dump gives."""
    hlo = next(GPU.glob("*gpu_after_optimizations.txt")).read_text()
    allocated = json.loads((GPU / "meta.json").read_text())["memory"]["allocated_bytes"]
    live_range = next(GPU.glob("*-live-range.txt")).read_text()
    xla_peak = int(re.search(r"peak usage: ([\d ]+) bytes", live_range).group(1).replace(" ", ""))
    code, data = oom_json("-", "--capacity", "150MiB", stdin=hlo)
    assert code == 1 and data["peak_is_estimate"] is True
    assert abs(data["peak_bytes"] / allocated - 1) < 0.02
    assert data["peak_bytes"] > xla_peak
    assert "estimated" in data["peak_basis"]
    code, text = run("oom", "-", "--capacity", "150MiB", stdin=hlo)
    assert "estimate" in text


def test_log_option_reads_a_verdict(tmp_path: Path) -> None:
    log = tmp_path / "error.txt"
    log.write_text("RESOURCE_EXHAUSTED: Ran out of memory on HBM, the total memory required "
                   "for HLO temporaries (1.00G) exceeds available HBM (0.10G).")
    code, data = oom_json(str(GPU), "--log", str(log))
    assert code == 1 and data["capacity_bytes"] == round(0.1 * GIB)
    assert data["fits"] is False and data["compiler_verdict"]


@pytest.mark.parametrize("args, exit_code", [
    (("oom", "no/such/dump"), 3),
    (("oom", str(GPU), "--device", "v5e", "--capacity", "1GiB"), 2),
    (("oom", str(GPU), "--capacity", "lots"), 2),
    (("oom", str(GPU), "--device", "v99"), 2),
    (("oom", str(GPU), "--sweep", "no/such/sweep"), 3),
    (("oom", str(GPU), "--log", "no/such/log"), 3),
])
def test_bad_input_exit_codes(args: tuple[str, ...], exit_code: int) -> None:
    code, output = run(*args)
    assert code == exit_code and output.startswith("error:") and "Traceback" not in output


SMALL_LLAMA = {"batch": 2, "seq_len": 16, "d_model": 64, "n_heads": 8, "n_kv_heads": 2,
               "d_ff": 96, "vocab": 128}
BLOCKWISE = {"attention": "blockwise", "attention_q_block": 4, "attention_kv_block": 4}


@pytest.mark.parametrize("model, overrides", [
    ("tiny", {"batch": 2, "seq_len": 16}),
    ("llama-1b", SMALL_LLAMA),
    ("tiny", {"batch": 2, "seq_len": 16, **BLOCKWISE}),
    ("llama-1b", {**SMALL_LLAMA, **BLOCKWISE}),
])
def test_activation_closed_form_equals_jax_residuals(model: str, overrides: dict) -> None:
    config = preset_config(model, **overrides)
    saved = _block_residuals(config, None)
    per_batch = [aval for aval, _ in saved if aval.ndim >= 2 and aval.shape[0] == config.batch]
    assert sum(a.size * a.dtype.itemsize for a in per_batch) + _rope(saved, config) == \
        activation_bytes_none(config, config.batch)


@pytest.mark.parametrize("model, overrides", [
    ("tiny", {"batch": 2, "seq_len": 16}), ("llama-1b", {**SMALL_LLAMA, **BLOCKWISE})])
def test_dots_with_no_batch_dims_closed_form_equals_jax_residuals(model: str,
                                                                  overrides: dict) -> None:
    config = preset_config(model, **overrides)
    saved = _block_residuals(config, "dots_with_no_batch_dims_saveable")
    per_batch = [aval for aval, _ in saved if aval.ndim >= 2 and aval.shape[0] == config.batch]
    assert sum(a.size * a.dtype.itemsize for a in per_batch) == \
        activation_bytes(config, config.batch, "dots_with_no_batch_dims_saveable")


def _block_residuals(config, policy) -> list:
    """What JAX saves for one block's backward pass, under `jax.checkpoint(policy)` if given
    (a jax.checkpoint_policies name or the policy itself)."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax._src.ad_checkpoint import saved_residuals

    from hloscope.workloads.layers import block
    from hloscope.workloads.transformer import _is_shape, block_shapes

    params = jax.tree.map(lambda s: jax.ShapeDtypeStruct(s, jnp.bfloat16), block_shapes(config),
                          is_leaf=_is_shape)
    x = jax.ShapeDtypeStruct((config.batch, config.seq_len, config.d_model), jnp.bfloat16)

    def run(x, p):
        return block(x, p, config)

    if policy is not None:
        chosen = getattr(jax.checkpoint_policies, policy) if isinstance(policy, str) else policy
        run = jax.checkpoint(run, policy=chosen)
    return saved_residuals(lambda x, p: run(x, p).astype(jnp.float32).sum(), x, params)


def _rope(saved: list, config) -> int:
    """RoPE's cos/sin tables ([1, s, 1, head_dim/2] fp32) do not scale with the batch."""
    tables = [a for a, _ in saved if a.ndim == 4 and a.shape[0] == 1
              and a.shape[1] == config.seq_len]
    return sum(a.size * a.dtype.itemsize for a in tables)


@pytest.mark.parametrize("model, overrides", [
    ("tiny", {"batch": 2, "seq_len": 16}), ("llama-1b", SMALL_LLAMA),
    ("llama-1b", {**SMALL_LLAMA, **BLOCKWISE})])
@pytest.mark.parametrize("policy", ["recompute:1", "recompute:2"])
def test_recompute_level_closed_forms_equal_jax_residuals(model: str, overrides: dict,
                                                          policy: str) -> None:
    from hloscope.workloads.remat import checkpoint_policy

    config = preset_config(model, **overrides)
    saved = _block_residuals(config, checkpoint_policy(policy))
    per_batch = [aval for aval, _ in saved if aval.ndim >= 2 and aval.shape[0] == config.batch]
    assert sum(a.size * a.dtype.itemsize for a in per_batch) == \
        activation_bytes(config, config.batch, policy)


def test_layer_working_set_holds_the_recomputed_scores_and_their_gradient() -> None:
    """The committed OOM (tiny, 4 scanned layers, b = 32, s = 2048, 4 heads, no remat): at the
    start of a layer's backward the body still reads all of that layer's residuals, among them
    its f32 and bf16 [b, heads, s, s] attention scores (b·heads·s²·(4 + 2) bytes), while the
    bf16 gradient of the scores (b·heads·s²·2) is a temporary."""
    result = CliRunner().invoke(cli, ["oom", str(OOM), "--format", "json"])
    data = json.loads(result.output)
    working = data["layer_working_set"]
    scores = 32 * 4 * 2048 * 2048
    assert working["in_flight_saved_bytes"] >= scores * (4 + 2)
    assert working["in_flight_saved_bytes"] <= data["measured_saved_per_layer_bytes"]
    assert working["temporary_bytes"] >= scores * 2
