"""Compile targets: `cpu`, `cpu:N`, `tpu:<device>:<topology>` and `gpu:<device>:<topology>`.

A target names a device from `hloscope.devices` and a topology: for TPUs the chip grid that
`jax.experimental.topologies.get_topology_desc` accepts (`v5e:2x2`, `v5p:2x2x1`, ...; each chip is
one or two JAX devices), for GPUs partitions x hosts x devices-per-host (`1x1x8`). No accelerator
is needed: TPU targets compile through libtpu's deviceless topologies, GPU targets through the
CUDA plugin with a rendered GpuTargetConfigProto (`hloscope.devices.render_gpu_target_config`).

`target_environment` gives the variables a child process needs *before* it imports jax: JAX on
the CPU, libtpu's metadata probes switched off, the CUDA constraints check skipped, ptxas found
(`--xla_gpu_cuda_data_dir`), and no persistent compilation cache (a cache hit dumps nothing).
The devices and meshes of a target (which import jax) are in `hloscope.workloads.topology`.
"""
from __future__ import annotations

import importlib.util
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from hloscope.devices import Device, get_device
from hloscope.errors import UsageError

TPU_QUIET_ENV = {  # DESIGN.md: keep libtpu from probing a metadata server it will not find
    "TPU_SKIP_MDS_QUERY": "1",
    "TPU_ACCELERATOR_TYPE": "v5litepod-4",
    "TPU_WORKER_HOSTNAMES": "localhost",
    "TPU_WORKER_ID": "0",
    # Measured: a second process loading libtpu while one holds it fails with "ABORTED: ...
    # libtpu multi-process lockfile" unless this is set; deviceless compiles share no chip.
    "ALLOW_MULTIPLE_LIBTPU_LOAD": "1",
}
EXAMPLES = "cpu, cpu:4, tpu:v5e:2x2, tpu:v5p:2x2x1, gpu:h100:1x1x8, gpu:a100:1x1x1"


@dataclass(frozen=True)
class Target:
    """Where a program is compiled for."""

    backend: str  # "cpu", "tpu" or "gpu"
    device_name: str  # a hloscope.devices name: "cpu", "v5e", "h100", ...
    topology: str = ""  # "2x2", "1x1x8"; for cpu the device count ("" = 1)

    @property
    def device(self) -> Device:
        return get_device(self.device_name)

    @property
    def spec(self) -> str:
        """The target string: `parse_target(t.spec) == t`."""
        if self.backend == "cpu":
            return f"cpu:{self.topology}" if self.topology else "cpu"
        return f"{self.backend}:{self.device_name}:{self.topology}"

    @property
    def name(self) -> str:
        """A file-name-safe form: `cpu`, `tpu-v5e-2x2`, `gpu-h100-1x1x8`."""
        return self.spec.replace(":", "-")

    @property
    def topology_dims(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.topology.split("x")) if self.topology else (1,)

    @property
    def num_devices(self) -> int:
        return math.prod(self.topology_dims) * self.device.devices_per_chip


def parse_target(text: str) -> Target:
    """A Target from its string; UsageError with examples when it is not one."""
    parts = text.strip().lower().split(":")
    backend = parts[0]
    if backend == "cpu" and len(parts) <= 2:
        count = parts[1] if len(parts) == 2 else ""
        if count:
            _check_dims(text, count, allowed=(1,))
        return Target("cpu", "cpu", count)
    if backend not in ("tpu", "gpu") or len(parts) != 3:
        raise UsageError(f"not a target: {text!r}; examples: {EXAMPLES}")
    device = get_device(parts[1])
    if device.backend != backend:
        raise UsageError(f"{parts[1]!r} is a {device.backend} device, not a {backend} one")
    _check_dims(text, parts[2], allowed=(2, 3) if backend == "tpu" else (3,))
    return Target(backend, device.name, parts[2])


def _check_dims(text: str, topology: str, allowed: tuple[int, ...]) -> None:
    dims = topology.split("x")
    if len(dims) not in allowed or not all(d.isdigit() and int(d) > 0 for d in dims):
        shapes = " or ".join("x".join(["N"] * n) for n in allowed)
        raise UsageError(f"bad topology {topology!r} in {text!r}: expected {shapes}")


def target_environment(target: Target, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a child process that compiles for `target` (base: usually os.environ)."""
    env = dict(base or {})
    env.update(TPU_QUIET_ENV)
    env["JAX_PLATFORMS"] = "cpu"
    env["JAX_ENABLE_COMPILATION_CACHE"] = "false"
    flags = [env.get("XLA_FLAGS", "").strip()]
    if target.backend == "gpu":
        env["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] = "1"
        flags.append(f"--xla_gpu_cuda_data_dir={cuda_data_dir()}")
    if target.backend == "cpu" and target.topology:
        flags.append(f"--xla_force_host_platform_device_count={target.topology}")
    env["XLA_FLAGS"] = " ".join(flag for flag in flags if flag)
    return env


def cuda_data_dir() -> Path:
    """`<site-packages>/nvidia/cuda_nvcc`: ptxas, which deviceless CUDA compiles need."""
    spec = importlib.util.find_spec("nvidia.cuda_nvcc")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError("GPU targets need ptxas: pip install nvidia-cuda-nvcc-cu12")
    return Path(next(iter(spec.submodule_search_locations)))
