"""Compile targets: `cpu`, `cpu:N`, `tpu:<device>:<topology>`, `tpu:<accelerator type>` and
`gpu:<device>:<topology>`, TPU ones optionally with `:slices=N` and `:any-topology`.

A target names a device from `hloscope.devices` and a topology: for TPUs the chip grid that
`jax.experimental.topologies.get_topology_desc` accepts (`v5e:2x2`, `v5p:2x2x1`, ...; each chip is
one or two JAX devices), for GPUs partitions x hosts x devices-per-host (`1x1x8`). No accelerator
is needed: TPU targets compile through libtpu's deviceless topologies, GPU targets through the
CUDA plugin with a rendered GpuTargetConfigProto (`hloscope.devices.render_gpu_target_config`).

TPU targets as the ecosystem names them:

- a Cloud TPU accelerator type, `tpu:v6e-128`, `tpu:v5litepod-16`, `tpu:v5p-256`, is read as the
  slice it names (`tpu:v6e:8x16`, `tpu:v5e:4x4`, `tpu:v5p:4x4x8`; `hloscope.configs.slices`);
- multislice: `:slices=N` (or `--num-slices N`, as xpk's `--num-slices` and MaxText's
  `compile_topology_num_slices`) is N such slices joined by the data-center network (DCN);
  libtpu builds them deviceless (`get_topology_desc(..., num_slices=N)`), each device carrying its
  `slice_index`. `tpu:v6e:8x16:slices=4` is 4 x 128 chips = 512 devices.
- a topology that is no real slice of its generation is refused, naming the real ones (libtpu
  compiles for `v6e:32x16` without complaint); `:any-topology` (`--allow-any-topology`) compiles
  it anyway and the target says so wherever it is printed.

`Target.spec` writes the canonical form, `tpu:<device>:<topology>[:slices=N][:any-topology]`
(an accelerator type becomes its grid), and `parse_target(t.spec) == t`.

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

from hloscope.configs.slices import (
    ACCELERATOR_ALIASES,
    ACCELERATOR_PREFIX,
    accelerator_types,
    find_accelerator_type,
    is_real_slice,
    slice_shapes,
)
from hloscope.devices import Device, get_device
from hloscope.errors import UsageError

TPU_QUIET_ENV = {  # keeps libtpu from probing a metadata server it will not find (docs/targets.md)
    "TPU_SKIP_MDS_QUERY": "1",
    "TPU_ACCELERATOR_TYPE": "v5litepod-4",
    "TPU_WORKER_HOSTNAMES": "localhost",
    "TPU_WORKER_ID": "0",
    # Measured: a second process loading libtpu while one holds it fails with "ABORTED: ...
    # libtpu multi-process lockfile" unless this is set; deviceless compiles share no chip.
    "ALLOW_MULTIPLE_LIBTPU_LOAD": "1",
}
EXAMPLES = ("cpu, cpu:4, tpu:v5e:2x2, tpu:v5p:2x2x1, tpu:v6e-128, tpu:v6e:8x16:slices=4, "
            "gpu:h100:1x1x8, gpu:a100:1x1x1")
SLICES_PART = "slices="
_LISTED = 12
ANY_TOPOLOGY_PART = "any-topology"


@dataclass(frozen=True)
class Target:
    """Where a program is compiled for."""

    backend: str  # "cpu", "tpu" or "gpu"
    device_name: str  # a hloscope.devices name: "cpu", "v5e", "h100", ...
    topology: str = ""  # "2x2", "1x1x8"; for cpu the device count ("" = 1); TPU: one slice
    num_slices: int = 1  # TPU multislice: slices joined by DCN
    any_topology: bool = False  # a TPU topology not checked against the real slice shapes

    @property
    def device(self) -> Device:
        return get_device(self.device_name)

    @property
    def spec(self) -> str:
        """The target string: `parse_target(t.spec) == t`."""
        if self.backend == "cpu":
            return f"cpu:{self.topology}" if self.topology else "cpu"
        parts = [self.backend, self.device_name, self.topology]
        if self.num_slices > 1:
            parts.append(f"{SLICES_PART}{self.num_slices}")
        if self.any_topology:
            parts.append(ANY_TOPOLOGY_PART)
        return ":".join(parts)

    @property
    def name(self) -> str:
        """A file-name-safe form: `cpu`, `tpu-v5e-2x2`, `gpu-h100-1x1x8`, `tpu-v6e-8x16-slices4`."""
        return self.spec.replace(":", "-").replace("=", "")

    @property
    def topology_dims(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.topology.split("x")) if self.topology else (1,)

    @property
    def chips_per_slice(self) -> int:
        return math.prod(self.topology_dims)

    @property
    def devices_per_slice(self) -> int:
        return self.chips_per_slice * self.device.devices_per_chip

    @property
    def num_devices(self) -> int:
        """Every JAX device of the target: slices x chips x devices per chip."""
        return self.num_slices * self.devices_per_slice

    @property
    def is_real_slice(self) -> bool | None:
        """Whether a TPU topology is a real slice of its generation (None: no table, or not a
        TPU)."""
        return is_real_slice(self.device_name, self.topology) if self.backend == "tpu" else None

    def describe(self) -> str:
        """What the target is in words: `4 x 128 TPU v6e chips = 512 devices`, with a label when
        its topology is no real slice."""
        if self.backend != "tpu":
            return f"{self.num_devices} x {self.device.description}"
        name = self.device_name
        kind = f"TPU{name[3:]}" if name.startswith("tpu") else f"TPU {name}"
        chips = f"{self.chips_per_slice} {kind} chips"
        text = f"{self.num_slices} x {chips}" if self.num_slices > 1 else chips
        text += f" = {self.num_devices} devices"
        if self.any_topology and not self.is_real_slice:
            text += f" (topology {self.topology} is no Cloud TPU slice of {self.device_name}: " \
                    "compiled with --allow-any-topology)"
        return text


def parse_target(text: str, num_slices: int | None = None,
                 allow_any_topology: bool = False) -> Target:
    """A Target from its string; UsageError with examples when it is not one. `num_slices` and
    `allow_any_topology` (the CLI's --num-slices and --allow-any-topology) add to what the
    string says; a slice count the string states differently is refused."""
    parts = text.strip().lower().split(":")
    backend = parts[0]
    if backend == "cpu" and len(parts) <= 2:
        count = parts[1] if len(parts) == 2 else ""
        if count:
            _check_dims(text, count, allowed=(1,))
        _no_tpu_options(text, num_slices, allow_any_topology)
        return Target("cpu", "cpu", count)
    if backend == "tpu" and len(parts) >= 2:
        return _parse_tpu(text, parts[1:], num_slices, allow_any_topology)
    if backend != "gpu" or len(parts) != 3:
        raise UsageError(f"not a target: {text!r}; examples: {EXAMPLES}")
    device = _device_of(parts[1], backend)
    _check_dims(text, parts[2], allowed=(3,))
    _no_tpu_options(text, num_slices, allow_any_topology)
    return Target(backend, device.name, parts[2])


def _device_of(name: str, backend: str) -> Device:
    device = get_device(name)
    if device.backend != backend:
        raise UsageError(f"{name!r} is a {device.backend} device, not a {backend} one")
    return device


def _no_tpu_options(text: str, num_slices: int | None, allow_any_topology: bool) -> None:
    if (num_slices or 1) > 1 or allow_any_topology:
        raise UsageError(f"{text!r}: slices and --allow-any-topology are for TPU targets only")


def _parse_tpu(text: str, parts: list[str], num_slices: int | None,
               allow_any_topology: bool) -> Target:
    """`<device>:<topology>` or `<accelerator type>`, then `slices=N` and `any-topology`."""
    if "-" in parts[0] and parts[0] != ANY_TOPOLOGY_PART:
        device_name, topology = _accelerator_type(text, parts[0])
        options = parts[1:]
    elif len(parts) >= 2:
        device_name, topology = _device_of(parts[0], "tpu").name, parts[1]
        options = parts[2:]
    else:
        raise UsageError(f"not a target: {text!r}; examples: {EXAMPLES}")
    _check_dims(text, topology, allowed=(2, 3))
    slices, any_topology = _tpu_options(text, options)
    if num_slices is not None and slices is not None and num_slices != slices:
        raise UsageError(f"{text!r} says {slices} slices, --num-slices {num_slices}")
    count = num_slices if num_slices is not None else slices if slices is not None else 1
    if count < 1:
        raise UsageError(f"{text!r}: the number of slices must be positive")
    target = Target("tpu", device_name, topology, count, any_topology or allow_any_topology)
    _check_slice(text, target)
    return target


def _accelerator_type(text: str, name: str) -> tuple[str, str]:
    found = find_accelerator_type(name)
    if found is not None:
        return found.device, found.topology
    prefix = name.rsplit("-", 1)[0]
    prefix = ACCELERATOR_ALIASES.get(prefix, prefix)
    device = next((d for d, p in ACCELERATOR_PREFIX.items() if p == prefix), None)
    if device is None:
        known = ", ".join([f"{p}-N" for p in ACCELERATOR_PREFIX.values()]
                          + [f"{alias}-N" for alias in ACCELERATOR_ALIASES])
        raise UsageError(f"{name!r} in {text!r} is no Cloud TPU accelerator type hloscope knows "
                         f"({known}); or write tpu:<device>:<topology>")
    raise UsageError(f"{name!r} in {text!r} is no Cloud TPU accelerator type; the {prefix} ones "
                     f"are {_real_shapes(device)}")


def _tpu_options(text: str, options: list[str]) -> tuple[int | None, bool]:
    slices: int | None = None
    any_topology = False
    for option in options:
        if option == ANY_TOPOLOGY_PART:
            any_topology = True
        elif option.startswith(SLICES_PART) and option[len(SLICES_PART):].isdigit():
            slices = int(option[len(SLICES_PART):])
        else:
            raise UsageError(f"{option!r} in {text!r}: expected {SLICES_PART}N or "
                             f"{ANY_TOPOLOGY_PART}; examples: {EXAMPLES}")
    return slices, any_topology


def _check_slice(text: str, target: Target) -> None:
    """Refuses a topology that is no real slice of its generation, unless told to allow it."""
    if target.any_topology or target.is_real_slice is not False:
        return
    raise UsageError(f"{target.topology} in {text!r} is not a Cloud TPU slice of "
                     f"{target.device_name}; the real ones are "
                     f"{_real_shapes(target.device_name)}. --allow-any-topology (or "
                     f":{ANY_TOPOLOGY_PART}) compiles it anyway")


def _real_shapes(device: str) -> str:
    """`1x1 (v6e-1), 2x2 (v6e-4), ...`: each real shape with its accelerator type (3D
    generations: the first ones, then the rule)."""
    named = {a.topology: a.name for a in accelerator_types(device)}
    shapes = slice_shapes(device) or ()
    listed = ", ".join(f"{s} ({named[s]})" if s in named else s for s in shapes[:_LISTED])
    if len(shapes) <= _LISTED:
        return listed
    largest = shapes[-1]
    return (f"{listed}, ... (larger: AxBxC with A <= B <= C all multiples of 4, up to "
            f"{max(int(d) for d in largest.split('x'))} per side and "
            f"{max(_chips(s) for s in shapes)} chips)")


def _chips(shape: str) -> int:
    return math.prod(int(d) for d in shape.split("x"))


def target_spec(text: str, num_slices: int | None = None,
                allow_any_topology: bool = False) -> str:
    """The canonical target string of `text` with the CLI's slice options applied."""
    return parse_target(text, num_slices, allow_any_topology).spec


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
