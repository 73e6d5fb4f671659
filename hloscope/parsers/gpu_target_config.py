"""The GPU an XLA:GPU dump was compiled for: `<module>.gpu_target_config.pbtxt`.

Newer XLA (jax 0.11) writes this GpuTargetConfigProto, as text, beside each module of a dump
(`module_0000.jit_train_step.gpu_target_config.pbtxt`). Two of its fields are read:
- `device_description_str`, e.g. "NVIDIA H100 80GB HBM3";
- `gpu_device_info.device_memory_size`, the bytes the device reported when the program was
  compiled. JAX's allocator takes its share of that: 75% on the H100 run of
  fixtures/gpu-h100-jax011, 63,763,120,128 of 85,017,493,504 bytes, against a `bytes_limit` of
  63,763,906,560.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

SUFFIX = ".gpu_target_config.pbtxt"
_MEMORY = re.compile(r"^\s*device_memory_size:\s*(\d+)\s*$", re.M)
_DESCRIPTION = re.compile(r'^\s*device_description_str:\s*"([^"]*)"\s*$', re.M)
_MODULE_PREFIX = re.compile(r"^(module_\d+)\.")


@dataclass(frozen=True, slots=True)
class GpuTarget:
    description: str
    memory_bytes: int
    source: str


def find_gpu_target(hlo_path: Path | None) -> GpuTarget | None:
    """The target config written beside the dump file `hlo_path` for its module, if any."""
    if hlo_path is None:
        return None
    prefix = _MODULE_PREFIX.match(hlo_path.name)
    if prefix is None:
        return None
    found = sorted(hlo_path.parent.glob(f"{prefix.group(1)}.*{SUFFIX}"))
    return read_gpu_target(found[0]) if found else None


def read_gpu_target(path: Path) -> GpuTarget | None:
    """None when the file states no device memory."""
    text = path.read_text(errors="replace")
    memory = _MEMORY.search(text)
    if memory is None:
        return None
    description = _DESCRIPTION.search(text)
    return GpuTarget(description.group(1) if description else "a GPU", int(memory.group(1)),
                     str(path))
