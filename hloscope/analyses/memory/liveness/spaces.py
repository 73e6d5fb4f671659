"""Memory spaces: what `S(n)` means for the backend that compiled a module.

The backend is the loader's (`hloscope.loader.backend.detect_backend`: the dump file's name,
or TPU's tiled layouts); the caller can also name it. What each space is and where it lives
comes from `hloscope/devices.py`: on TPU S(1) is on-chip VMEM and S(2) SMEM, which do not count
against HBM; on GPU S(1) (collective memory) and S(2) (temporaries) are device HBM; S(5) is
pinned host memory. Device memory is the sum of the spaces that live in it.
"""
from __future__ import annotations

from hloscope.devices import (
    HOST_MEMORY_SPACE,
    MEMORY_SPACES,
    MemoryLocation,
    MemorySpace,
    memory_space,
)


def space_info(backend: str, number: int) -> MemorySpace:
    """What `S(number)` is on `backend`; on an unknown backend S(0) is device memory."""
    if backend in MEMORY_SPACES:
        return memory_space(backend, number)
    if number == 0:
        return MemorySpace(0, "default", MemoryLocation.DEVICE, "xla/layout.h default space")
    if number == HOST_MEMORY_SPACE:
        return MemorySpace(number, "host", MemoryLocation.HOST, "xla/layout.h host space")
    return MemorySpace(number, f"S({number})", MemoryLocation.UNKNOWN, "backend unknown")


def is_device_space(backend: str, number: int) -> bool:
    return space_info(backend, number).location is MemoryLocation.DEVICE
