"""Mesh axes and partition specs: data parallel, tensor parallel and FSDP, chosen by the config.

The mesh has a `data` axis (the batch is split over it) and, when `tensor_parallel` > 1, a
`tensor` axis of that size (Megatron-style: column-parallel Q/K/V, fc, gate and up projections,
row-parallel output, proj and down projections, vocabulary-parallel embeddings). With `fsdp`,
every weight is also split over `data` on its other matrix dimension, and the fp32 master copy
and AdamW moments are sharded exactly like the parameters (ZeRO-3 style). A dimension that an
axis does not divide stays whole. Norm scales and row-parallel biases are replicated.

Without tensor parallelism or FSDP the parameters are replicated and no sharding constraint is
added, which keeps the data-parallel program the fixtures were made from unchanged.

On several slices, or with a mesh option stated, the mesh is the hybrid (`data`, `fsdp`,
`tensor`) one of `hloscope.configs.mesh`: `data` spans the slices (DCN), `fsdp` and `tensor` stay
inside one (ICI). The batch (and every activation's batch dimension) is split over `data` x
`fsdp`, and the weights over `fsdp` in place of `data`, so parameter all-gathers and gradient
reduce-scatters stay on ICI and only the data-parallel gradient reduction crosses slices.
This module imports jax: import it only in child processes and tests.
"""
from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from hloscope.configs.config import TransformerConfig
from hloscope.configs.mesh import DATA, FSDP, TENSOR, MeshConfig, MeshPlan, plan_mesh
from hloscope.workloads.topology import slice_index, slice_order

COLUMN_PARALLEL = frozenset({"qkv", "q", "k", "v", "fc", "gate", "up", "unembed"})
ROW_PARALLEL = frozenset({"out", "proj", "down"})


def train_mesh(mesh: Mesh, config: MeshConfig) -> Mesh:
    """The target's devices as a (data,) or (data, tensor) mesh, or on several slices (or with
    a mesh option stated) the hybrid (data, fsdp, tensor) one."""
    devices = mesh.devices.reshape(-1)
    plan = mesh_plan(mesh, config)
    if not plan.hybrid:
        if plan.ici_tensor == 1:
            return Mesh(devices, (DATA,))
        return Mesh(np.asarray(devices).reshape(plan.shape), (DATA, TENSOR))
    ordered = np.array(sorted(devices, key=slice_order), dtype=object)
    return Mesh(ordered.reshape(plan.device_shape).reshape(plan.shape), plan.axis_names)


def mesh_plan(mesh: Mesh, config: MeshConfig) -> MeshPlan:
    """The plan of `config` on the devices of `mesh` (their slices read from `slice_index`)."""
    devices = mesh.devices.reshape(-1)
    slices = len({slice_index(device) for device in devices})
    return plan_mesh(config, slices, devices.size // slices)


def is_sharded(config: TransformerConfig) -> bool:
    return config.fsdp or config.tensor_parallel > 1 or (config.ici_fsdp_parallel or 1) > 1


def batch_axes(mesh: Mesh) -> str | tuple[str, ...]:
    """What the batch dimension is split over: `data`, or `data` x `fsdp` on a hybrid mesh."""
    return (DATA, FSDP) if FSDP in mesh.axis_names else DATA


def data_size(mesh: Mesh) -> int:
    """Ways the batch is split."""
    axes = batch_axes(mesh)
    return math.prod(mesh.shape[axis] for axis in (axes if isinstance(axes, tuple) else (axes,)))


def param_spec(path: tuple[str, ...], shape: tuple[int, ...], stacked: int,
               config: TransformerConfig, mesh: Mesh) -> P:
    """The PartitionSpec of one parameter; `stacked` leading axes are layer axes (never split)."""
    matrix = shape[stacked:]
    axes = _matrix_axes(path, len(matrix), config, mesh)
    axes = [axis if axis and dim % _axis_size(mesh, axis) == 0 else None
            for axis, dim in zip(axes, matrix, strict=True)]
    return P(*([None] * stacked), *axes)


def _fsdp_axis(config: TransformerConfig, mesh: Mesh) -> str | None:
    """The axis weights are sharded over: `fsdp` on a hybrid mesh (when larger than 1), else
    `data` when the config asks for FSDP."""
    if FSDP in mesh.axis_names:
        return FSDP if mesh.shape[FSDP] > 1 else None
    return DATA if config.fsdp else None


def _matrix_axes(path: tuple[str, ...], rank: int, config: TransformerConfig,
                 mesh: Mesh) -> list[str | None]:
    tensor = TENSOR if TENSOR in mesh.axis_names and mesh.shape[TENSOR] > 1 else None
    fsdp = _fsdp_axis(config, mesh)
    name, role = path[-1], path[-2] if len(path) > 1 else ""
    if name == "tokens":  # [vocab, d_model]
        return [tensor, fsdp]
    if name == "positions":
        return [None, fsdp]
    if rank == 2 and role in COLUMN_PARALLEL:
        return [fsdp, tensor]
    if rank == 2 and role in ROW_PARALLEL:
        return [tensor, fsdp]
    if rank == 1 and name == "b" and role in COLUMN_PARALLEL:
        return [tensor]
    return [None] * rank


def _axis_size(mesh: Mesh, axis: str) -> int:
    return mesh.shape[axis]


def constrain(x: jax.Array, mesh: Mesh, config: TransformerConfig, *spec: str | None) -> jax.Array:
    """A sharding constraint on an activation, only when the model is sharded beyond data."""
    if not is_sharded(config):
        return x
    axes = [batch_axes(mesh) if axis == DATA else axis if axis in mesh.axis_names else None
            for axis in spec]
    return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P(*axes)))


def named(mesh: Mesh, spec: P) -> NamedSharding:
    return NamedSharding(mesh, spec)


def batch_sharding(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, P(batch_axes(mesh)))


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, P())


def describe(mesh: Mesh, config: TransformerConfig) -> dict[str, Any]:
    """The mesh and sharding choices, for manifests."""
    return {"mesh": dict(mesh.shape), "fsdp": config.fsdp,
            "tensor_parallel": config.tensor_parallel}
