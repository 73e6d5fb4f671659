"""XLA's own IotaTileAssignment expansion, as a test oracle (a private path, never a dependency).

jaxlib does not expose IotaReplicaGroupList, but it wraps the same IotaTileAssignment that the
replica-group list is built on: `xla_client.HloSharding.iota_tile(dims, reshape_dims,
transpose_perm).tile_assignment_devices()` is iota(prod(reshape_dims)) reshaped, transposed and
flattened by XLA's C++ code.
"""
from __future__ import annotations


def xla_iota_order(reshape_dims: tuple[int, ...], permutation: tuple[int, ...]) -> list[int] | None:
    """XLA's flattened order, or None when jaxlib's API is not there."""
    try:
        from jax._src.lib import xla_client
    except Exception:
        return None
    total = 1
    for dim in reshape_dims:
        total *= dim
    tiled = [dim for dim in (reshape_dims[p] for p in permutation)]
    sharding = xla_client.HloSharding.iota_tile(tiled, list(reshape_dims), list(permutation))
    devices = list(sharding.tile_assignment_devices())
    return devices if len(devices) == total else None
