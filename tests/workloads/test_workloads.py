"""Workloads: targets, the transformer's parameter count, and live compiles in child processes.

Live compiles run through `compile_in_subprocess` (one child per compile, as in production). The
default suite keeps one CPU, one TPU and one GPU compile (`compile` marker); the rest are `slow`.
"""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO

from hloscope.configs.config import TransformerConfig, closed_form_param_count, param_count
from hloscope.configs.targets import parse_target, target_environment
from hloscope.errors import UsageError
from hloscope.formats.compile_record import CompileResult
from hloscope.workloads.runner import CompileRequest, compile_in_subprocess

TINY = TransformerConfig(d_model=64, n_layers=2, n_heads=4, d_ff=256, vocab=256, seq_len=32,
                         batch=8)
DUMP_KINDS = ("after_optimizations.txt", "after_optimizations-buffer-assignment.txt",
              "after_optimizations-memory-usage-report.txt", "after_optimizations-live-range.txt")


def jax_available() -> bool:
    try:
        import jax  # noqa: F401
    except ImportError:
        return False
    return True


needs_jax = pytest.mark.skipif(not jax_available(), reason="jax is not importable")


@pytest.mark.parametrize(("text", "name", "devices"), [
    ("cpu", "cpu", 1), ("cpu:4", "cpu-4", 4), ("tpu:v5e:2x2", "tpu-v5e-2x2", 4),
    ("TPU:v6e:2x2", "tpu-v6e-2x2", 4), ("tpu:v5p:2x2x1", "tpu-v5p-2x2x1", 4),
    ("tpu:v4:2x2x1", "tpu-v4-2x2x1", 4), ("tpu:tpu7x:2x2x1", "tpu-tpu7x-2x2x1", 8),
    ("tpu:v3:2x2", "tpu-v3-2x2", 8), ("gpu:h100:1x1x8", "gpu-h100-1x1x8", 8),
    ("gpu:a100:1x1x1", "gpu-a100-1x1x1", 1),
])
def test_parse_target(text: str, name: str, devices: int) -> None:
    target = parse_target(text)
    assert target.name == name and target.num_devices == devices
    assert parse_target(target.spec) == target


@pytest.mark.parametrize("text", ["tpu", "tpu:v5e", "tpu:h100:2x2", "gpu:v5e:1x1x8",
                                  "gpu:h100:8", "tpu:v5e:2xx2", "cpu:0", "npu:x:1", "tpu:zz:2x2"])
def test_bad_targets_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        parse_target(text)


def test_target_environment() -> None:
    base = {"PATH": "/bin", "XLA_FLAGS": "--xla_dump_hlo_as_text"}
    gpu = target_environment(parse_target("gpu:h100:1x1x8"), base)
    assert gpu["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] == "1" and gpu["JAX_PLATFORMS"] == "cpu"
    flags = gpu["XLA_FLAGS"].split()
    assert flags[0] == "--xla_dump_hlo_as_text" and gpu["PATH"] == "/bin"
    data_dir = Path(flags[1].removeprefix("--xla_gpu_cuda_data_dir="))
    assert (data_dir / "bin").is_dir(), "nvidia-cuda-nvcc-cu12 provides bin/ptxas"
    tpu = target_environment(parse_target("tpu:v5e:2x2"))
    assert tpu["TPU_SKIP_MDS_QUERY"] == "1" and tpu["TPU_WORKER_HOSTNAMES"] == "localhost"
    assert "JAX_SKIP_CUDA_CONSTRAINTS_CHECK" not in tpu
    assert "--xla_force_host_platform_device_count=4" in target_environment(
        parse_target("cpu:4"))["XLA_FLAGS"]


def test_importing_hloscope_never_imports_jax() -> None:
    code = ("import sys, hloscope, hloscope.devices, hloscope.configs.targets, "
            "hloscope.workloads.runner, hloscope.configs.config, hloscope.formats.compile_record; "
            "sys.exit('jax' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO).returncode == 0


def test_config_validation_and_round_trip() -> None:
    assert TransformerConfig.from_dict(TINY.to_dict()) == TINY
    for bad in ({"n_heads": 5}, {"remat": "some"}, {"param_dtype": "int8"}, {"batch": 0}):
        with pytest.raises(UsageError):
            TransformerConfig(**{**TINY.to_dict(), **bad})
    with pytest.raises(UsageError, match="unknown"):
        TransformerConfig.from_dict({"d_model": 64, "layers": 3})


@pytest.mark.parametrize(("h", "layers", "vocab", "seq"), [(128, 2, 512, 64), (768, 12, 50257,
                                                                              1024)])
def test_param_count_closed_form(h: int, layers: int, vocab: int, seq: int) -> None:
    config = TransformerConfig(d_model=h, n_layers=layers, n_heads=4, d_ff=4 * h, vocab=vocab,
                               seq_len=seq)
    assert param_count(config) == closed_form_param_count(h, vocab, layers, seq)


def test_gpt2_small_parameter_count() -> None:
    # GPT-2 small: 124,439,808 parameters (tied embeddings, 1024 positions, vocab 50257).
    assert closed_form_param_count(768, 50257, 12, 1024) == 124_439_808


@needs_jax
@pytest.mark.parametrize("scan_layers", [False, True])
def test_abstract_parameter_tree_sums_to_closed_form(scan_layers: bool) -> None:
    from hloscope.workloads import transformer

    config = TransformerConfig(d_model=96, n_layers=3, n_heads=4, d_ff=384, vocab=1000,
                               seq_len=48, scan_layers=scan_layers)
    tree = transformer.abstract_params(config, "float32")
    assert transformer.leaf_count(tree) == closed_form_param_count(96, 1000, 3, 48)


@needs_jax
@pytest.mark.parametrize("options", [{}, {"remat": "full"}, {"scan_layers": True},
                                     {"param_dtype": "float32", "compute_dtype": "float32"}])
def test_train_step_traces_to_the_same_state_shapes(options: dict) -> None:
    import jax

    from hloscope.workloads import transformer

    config = dataclasses.replace(TINY, **options)
    state = transformer.abstract_state(config)
    new_state, metrics = jax.eval_shape(transformer.train_step_fn(config), state,
                                        transformer.abstract_batch(config))
    assert jax.tree.structure(new_state) == jax.tree.structure(state)
    assert all(a.shape == b.shape and a.dtype == b.dtype
               for a, b in zip(jax.tree.leaves(new_state), jax.tree.leaves(state), strict=True))
    assert metrics["loss"].shape == () and (state.master is None) == (config.param_dtype ==
                                                                      "float32")


def compile_tiny(tmp_path: Path, target: str, **options: object) -> CompileResult:
    config = dataclasses.replace(TINY, **options)
    request = CompileRequest(target, str(tmp_path / "dump"), builder_kwargs=config.to_dict())
    return compile_in_subprocess(request, timeout=600)


def train_step_files(result: CompileResult) -> list[str]:
    return sorted(p.name for p in Path(result.dump_dir).iterdir()
                  if p.name.startswith("module_") and ".jit_train_step." in p.name)


def assert_compiled(result: CompileResult) -> list[str]:
    assert result.status == "ok", f"{result.error}\n{result.log_tail}"
    assert result.module_name == "jit_train_step" and result.compile_seconds > 0
    assert result.versions["jax"] == result.versions["jaxlib"]
    memory = result.memory
    assert memory.argument_bytes > 0 and memory.output_bytes > 0 and memory.alias_bytes > 0
    assert memory.allocated_bytes > 0
    files = train_step_files(result)
    for kind in DUMP_KINDS:
        assert any(name.endswith(kind) for name in files), (kind, files)
    return files


@pytest.mark.compile
def test_cpu_compile_in_subprocess(tmp_path: Path) -> None:
    result = compile_tiny(tmp_path, "cpu")
    files = assert_compiled(result)
    assert any(name.endswith(".cpu_after_optimizations.txt") for name in files)
    assert result.memory.temp_bytes > 0 and result.cost.flops > 0
    assert result.cost.bytes_accessed > 0


@pytest.mark.compile
def test_tpu_compile_in_subprocess(tmp_path: Path) -> None:
    result = compile_tiny(tmp_path, "tpu:v5e:2x2", remat="full")
    files = assert_compiled(result)
    assert "libtpu" in result.versions and result.cost.flops > 0
    text = (Path(result.dump_dir) / next(f for f in files if f.endswith(
        ".after_optimizations.txt"))).read_text()
    assert "rematted_computation" in text and "layer_1" in text


@pytest.mark.compile
def test_gpu_compile_in_subprocess_accepts_rendered_a100_config(tmp_path: Path) -> None:
    result = compile_tiny(tmp_path, "gpu:a100:1x1x1")
    files = assert_compiled(result)
    assert any(name.endswith(".sm_8.0_gpu_after_optimizations.txt") for name in files)
    assert result.cost is None  # no cost_analysis() on deviceless GPU compiles (docs/targets.md)


@pytest.mark.slow
def test_tpu_oom_is_a_result_with_dumps(tmp_path: Path) -> None:
    result = compile_tiny(tmp_path, "tpu:v5e:2x2", seq_len=4096, batch=512)
    assert result.status == "oom" and "RESOURCE_EXHAUSTED" in result.error
    assert "exceeds available HBM (15.75G)" in result.error
    assert any(name.endswith(".after_optimizations.txt") for name in train_step_files(result))


@pytest.mark.slow
@pytest.mark.parametrize("target", ["tpu:v4:2x2x1", "tpu:tpu7x:2x2x1", "gpu:h100:1x1x8"])
def test_more_deviceless_targets_compile(tmp_path: Path, target: str) -> None:
    assert_compiled(compile_tiny(tmp_path, target))


@pytest.mark.slow
def test_scanned_layers_have_a_known_trip_count(tmp_path: Path) -> None:
    result = compile_tiny(tmp_path, "cpu", scan_layers=True)
    files = assert_compiled(result)
    name = next(f for f in files if f.endswith(".cpu_after_optimizations.txt"))
    assert '"known_trip_count":{"n":"2"}' in (Path(result.dump_dir) / name).read_text()


def test_builder_errors_become_error_results(tmp_path: Path) -> None:
    result = compile_tiny(tmp_path, "cpu:3")  # batch 8 does not split over 3 devices
    assert result.status == "error" and "does not split over 3 devices" in result.error


def test_child_crash_becomes_a_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "crashing_builder.py").write_text(
        "import os, signal\n\ndef build(mesh):\n    os.kill(os.getpid(), signal.SIGSEGV)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the child keeps it after the repo root
    request = CompileRequest("cpu", str(tmp_path / "dump"), builder="crashing_builder:build")
    result = compile_in_subprocess(request, timeout=300)
    assert result.status == "crash" and result.returncode == -11
    assert "SIGSEGV" in result.error and result.log_tail is not None


def test_result_round_trips_through_json(tmp_path: Path) -> None:
    meta = json.loads((FIXTURES / "cpu" / "remat-none" / "meta.json").read_text())
    fields = {k: meta[k] for k in ("target", "status", "module_name", "memory", "cost",
                                   "lower_seconds", "compile_seconds", "versions")}
    result = CompileResult.from_dict({**fields, "dump_dir": str(tmp_path)})
    assert result.memory.allocated_bytes == meta["memory"]["allocated_bytes"]
    assert CompileResult.from_dict(result.to_dict()) == result


FIXTURE_METAS = sorted(FIXTURES.glob("*/*/meta.json"))


@pytest.mark.parametrize("meta_path", FIXTURE_METAS, ids=lambda p: str(p.parent.relative_to(
    FIXTURES)))
def test_fixture_meta_describes_its_folder(meta_path: Path) -> None:
    meta = json.loads(meta_path.read_text())
    assert meta["status"] == "ok" and meta["module_name"] == "jit_train_step"
    assert sorted(p.name for p in meta_path.parent.iterdir() if p.name != "meta.json") == sorted(
        meta["files"])
    memory = meta["memory"]
    assert min(memory["argument_bytes"], memory["output_bytes"], memory["temp_bytes"]) > 0
    if "made_by" in meta:  # run on a lent device (hloscope profile), not compiled deviceless
        assert meta["target_name"] == meta_path.parent.parent.name and parse_target(meta["target"])
        assert meta["allocator"]["peak_bytes_in_use"] > 0
        return
    assert meta["compile_seconds"] > 0 and parse_target(meta["target"]).name == meta[
        "target_name"]


@pytest.mark.parametrize("target_name", ["tpu-v5e-2x2", "gpu-h100-1x1x8"])
def test_fixtures_show_full_remat_saving_accelerator_memory(target_name: str) -> None:
    def temp(variant: str) -> int:
        meta = json.loads((FIXTURES / target_name / variant / "meta.json").read_text())
        return meta["memory"]["temp_bytes"]

    assert temp("remat-full") < temp("remat-none")
