"""A target's JAX devices and meshes: deviceless TPU topologies (one slice or several), GPU
topologies from a rendered GpuTargetConfigProto, or the host's CPU devices. Imports jax when
called.

Multislice (docs/targets.md): `get_topology_desc(name, "tpu", num_slices=N)` builds every slice's
devices deviceless, each with its `slice_index`. The devices of a multislice target are ordered
by (slice_index, id), so that a reshape to (slices, devices per slice) puts one slice in each row:
the DCN axis first, the ICI axes after it (`hloscope.configs.mesh`). A single slice keeps the order
the topology gives.
"""
from __future__ import annotations

import math
from typing import Any

from hloscope.configs.targets import Target
from hloscope.errors import UsageError


def make_topology(target: Target) -> list[Any]:
    """The target's JAX devices (compile-only for TPU and GPU). Imports jax."""
    import jax
    from jax.experimental import topologies

    if target.backend == "cpu":
        return jax.devices("cpu")[: target.num_devices]
    device = target.device
    if target.backend == "tpu":
        options: dict[str, Any] = {"chip_config_name": device.chip_config_name} \
            if device.chip_config_name else {}
        if target.num_slices > 1:
            options["num_slices"] = target.num_slices
        if target.chips_per_slice == 1:  # measured: v5e:1x1 / v6e:1x1 need one-chip hosts
            options["chips_per_host_bounds"] = [1, 1, 1]
        topology_name = f"{device.name}:{target.topology}"
        devices = list(topologies.get_topology_desc(topology_name, "tpu", **options).devices)
        return sorted(devices, key=slice_order) if target.num_slices > 1 else devices
    from hloscope.devices import render_gpu_target_config

    described = topologies.get_topology_desc(
        platform="cuda", topology_name="", topology=target.topology,
        target_config=render_gpu_target_config(device))
    return list(described.devices)


def slice_index(device: Any) -> int:
    """The slice a device belongs to (0 for devices that do not say)."""
    return int(getattr(device, "slice_index", 0) or 0)


def slice_order(device: Any) -> tuple[int, int]:
    return slice_index(device), int(device.id)


def make_mesh(target: Target, axis_names: tuple[str, ...] = ("data",),
              mesh_shape: tuple[int, ...] | None = None) -> Any:
    """A Mesh over every device of the target, reshaped from the topology's device order (which
    works where `jax.make_mesh` refuses a shape). One axis over all devices by default."""
    import numpy as np
    from jax.sharding import Mesh

    devices = make_topology(target)
    if len(devices) != target.num_devices:
        raise UsageError(f"{target.spec}: expected {target.num_devices} devices, "
                         f"the topology has {len(devices)}")
    shape = mesh_shape or (len(devices),) + (1,) * (len(axis_names) - 1)
    if len(shape) != len(axis_names) or math.prod(shape) != len(devices):
        raise UsageError(f"mesh shape {shape} does not fit {len(devices)} devices and axes "
                         f"{axis_names}")
    return Mesh(np.array(devices, dtype=object).reshape(shape), axis_names)
