"""`hloscope.from_jax` compiles the same program `hloscope build` does (CPU in this process, TPU in
a deviceless child), records the verdict, applies remat policies, and fails cleanly."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from click.testing import CliRunner
from conftest import FIXTURES, REPO
from jax.sharding import AbstractMesh, NamedSharding
from jax.sharding import PartitionSpec as P

import hloscope
from hloscope.cli.main import cli
from hloscope.configs.presets import preset_config
from hloscope.errors import UsageError
from hloscope.workloads import transformer
from hloscope.workloads.capture import CaptureError

ACCELERATOR_SHAPES = {"seq_len": 512, "batch": 64}  # the TPU fixtures' (fixtures/README.md)


def tiny_step(devices: int, **shapes: int) -> tuple:
    """The tiny preset's train step with abstract arguments sharded as `hloscope build` shards
    them (replicated state, batch split over `data`), over an abstract mesh."""
    config = preset_config("tiny", **shapes)
    mesh = AbstractMesh((devices,), ("data",))
    state = transformer.abstract_state(config, NamedSharding(mesh, P()))
    batch = transformer.abstract_batch(config, NamedSharding(mesh, P("data")))
    return transformer.train_step_fn(config), state, batch


def same_program(ours: hloscope.HloModule, built: hloscope.HloModule) -> None:
    """Equal up to metadata: instruction count, opcodes, FLOPs (trip counts applied)."""
    a, b = hloscope.inspect(ours), hloscope.inspect(built)
    assert a.instruction_count == b.instruction_count
    assert a.op_counts == b.op_counts
    assert a.costs.total_flops == b.costs.total_flops
    assert a.parameter_bytes == b.parameter_bytes
    assert ours.num_partitions == built.num_partitions


def cli_build(target: str, folder: Path, *extra: str) -> hloscope.HloModule:
    result = CliRunner().invoke(cli, ["build", "--model", "tiny", "--target", target, "--policy",
                                      "none", "--unrolled", "--no-cache", *extra,
                                      "-o", str(folder)])
    assert result.exit_code == 0, result.output
    return hloscope.load(folder)


@pytest.mark.compile
def test_cpu_from_jax_is_the_module_cli_build_compiles(tmp_path: Path) -> None:
    fn, state, batch = tiny_step(1)
    module = hloscope.from_jax(fn, state, batch, target="cpu", donate_argnums=(0,))
    same_program(module, cli_build("cpu", tmp_path / "build"))
    captured = hloscope.load_program(module.source).capture
    assert captured is not None and captured.in_process and captured.status == "ok"
    # XLA's own buffer assignment came along: memory() shows the allocation
    assert hloscope.memory(module).xla.allocation_bytes > 0


@pytest.mark.compile
def test_tpu_from_jax_is_the_committed_tpu_build(tmp_path: Path) -> None:
    """One deviceless TPU compile in a child process; the fixture is `hloscope build`'s program
    for the same config (fixtures/make_fixtures.py compiles through the same builder)."""
    fn, state, batch = tiny_step(4, **ACCELERATOR_SHAPES)
    module = hloscope.from_jax(fn, state, batch, target="tpu:v5e:2x2", donate_argnums=(0,),
                               dump_dir=tmp_path / "capture")
    fixture = FIXTURES / "tpu-v5e-2x2" / "remat-none"
    assert json.loads((fixture / "meta.json").read_text())["config"]["remat"] == "none"
    same_program(module, hloscope.load(fixture))
    captured = hloscope.load_program(module.source).capture
    assert captured.target == "tpu:v5e:2x2" and not captured.in_process
    assert captured.device == "v5e"
    assert "cl_" in Path(module.source).name  # libtpu's dump names


@pytest.mark.slow
@pytest.mark.compile
def test_tpu_from_jax_is_the_module_cli_build_compiles(tmp_path: Path) -> None:
    fn, state, batch = tiny_step(4)
    module = hloscope.from_jax(fn, state, batch, target="tpu:v5e:2x2", donate_argnums=(0,))
    same_program(module, cli_build("tpu:v5e:2x2", tmp_path / "build"))


def example_train_step():
    """examples/quickstart.py's train step: an MLP whose blocks go through `remat`."""
    spec = importlib.util.spec_from_file_location("quickstart", REPO / "examples" / "quickstart.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.train_step


def mlp_args() -> tuple:
    w = jax.ShapeDtypeStruct((64, 64), jnp.float32)
    return {"layers": [w, w, w]}, jax.ShapeDtypeStruct((32, 64), jnp.float32)


@pytest.mark.compile
def test_policy_reaches_the_function_as_remat() -> None:
    """JAX marks replayed forward ops `rematted_computation` (a contract JAX tests itself:
    docs/flops-and-remat.md)."""
    plain = hloscope.from_jax(example_train_step(), *mlp_args(), policy="none")
    full = hloscope.from_jax(example_train_step(), *mlp_args(), policy="full")
    assert "rematted_computation" not in Path(plain.source).read_text()
    assert "rematted_computation" in Path(full.source).read_text()
    assert hloscope.remat(plain).remat_instructions == 0
    assert hloscope.remat(full).remat_instructions > 0
    with pytest.raises(UsageError, match="remat policy"):
        hloscope.from_jax(example_train_step(), *mlp_args(), policy="sometimes")


def test_failures_are_hloscope_errors(tmp_path: Path) -> None:
    def broken(x: jax.Array) -> jax.Array:
        return x @ jnp.ones((3, 3))  # shapes do not match

    with pytest.raises(CaptureError, match="broken") as raised:
        hloscope.from_jax(broken, jax.ShapeDtypeStruct((2, 2), jnp.float32))
    assert raised.value.exit_code == 4
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "file").write_text("x")
    with pytest.raises(UsageError, match="not empty"):
        hloscope.from_jax(jnp.sin, jnp.ones(3), dump_dir=tmp_path / "used")
    with pytest.raises(UsageError, match="target"):
        hloscope.from_jax(jnp.sin, jnp.ones(3), target="tpu")
