"""Mesh axes and partition specs: data parallel, tensor parallel and FSDP, chosen by the config.

The mesh has a `data` axis (the batch is split over it) and, when `tensor_parallel` > 1, a
`tensor` axis of that size (Megatron-style: column-parallel Q/K/V, fc, gate and up projections,
row-parallel output, proj and down projections, vocabulary-parallel embeddings). With `fsdp`,
every weight is also split over `data` on its other matrix dimension, and the fp32 master copy
and AdamW moments are sharded exactly like the parameters (ZeRO-3 style). A dimension that an
axis does not divide stays whole. Norm scales and row-parallel biases are replicated.

Without tensor parallelism or FSDP the parameters are replicated and no sharding constraint is
added, which keeps the data-parallel program the fixtures were made from unchanged.
This module imports jax: import it only in child processes and tests.
"""
from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from hloscope.errors import UsageError
from hloscope.spec.config import TransformerConfig

DATA, TENSOR = "data", "tensor"
COLUMN_PARALLEL = frozenset({"qkv", "q", "k", "v", "fc", "gate", "up", "unembed"})
ROW_PARALLEL = frozenset({"out", "proj", "down"})


def train_mesh(mesh: Mesh, config: TransformerConfig) -> Mesh:
    """The target's devices as a (data,) or (data, tensor) mesh."""
    devices = mesh.devices.reshape(-1)
    tensor = config.tensor_parallel
    if devices.size % tensor:
        raise UsageError(f"tensor parallelism {tensor} does not divide {devices.size} devices")
    if tensor == 1:
        return Mesh(devices, (DATA,))
    return Mesh(np.asarray(devices).reshape(devices.size // tensor, tensor), (DATA, TENSOR))


def is_sharded(config: TransformerConfig) -> bool:
    return config.fsdp or config.tensor_parallel > 1


def data_size(mesh: Mesh) -> int:
    return mesh.shape[DATA]


def param_spec(path: tuple[str, ...], shape: tuple[int, ...], stacked: int,
               config: TransformerConfig, mesh: Mesh) -> P:
    """The PartitionSpec of one parameter; `stacked` leading axes are layer axes (never split)."""
    matrix = shape[stacked:]
    axes = _matrix_axes(path, len(matrix), config, mesh)
    axes = [axis if axis and dim % _axis_size(mesh, axis) == 0 else None
            for axis, dim in zip(axes, matrix, strict=True)]
    return P(*([None] * stacked), *axes)


def _matrix_axes(path: tuple[str, ...], rank: int, config: TransformerConfig,
                 mesh: Mesh) -> list[str | None]:
    tensor = TENSOR if TENSOR in mesh.axis_names else None
    fsdp = DATA if config.fsdp else None
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
    axes = [axis if axis in mesh.axis_names else None for axis in spec]
    return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P(*axes)))


def named(mesh: Mesh, spec: P) -> NamedSharding:
    return NamedSharding(mesh, spec)


def batch_sharding(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, P(DATA))


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, P())


def describe(mesh: Mesh, config: TransformerConfig) -> dict[str, Any]:
    """The mesh and sharding choices, for manifests."""
    return {"mesh": dict(mesh.shape), "fsdp": config.fsdp,
            "tensor_parallel": config.tensor_parallel}
