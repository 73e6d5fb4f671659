"""How many bytes one device may use, and where that figure comes from.

In order of precedence: `--capacity SIZE` (what the user says), `--device NAME` (the device table
in `hloscope/devices.py`), the capacity a TPU OOM message states (`available HBM (15.75G)`), the
memory the GPU a dump was compiled on reported (`parsers/gpu_target_config.py`), the target of
a build folder's manifest. TPU figures are the usable HBM libtpu reports. GPU figures
are JAX's allocator share of the memory CUDA reports (`JAX_DEFAULT_GPU_MEMORY_FRACTION`, 75%;
`XLA_CLIENT_MEM_FRACTION` changes it): the CUDA context and the runtime's own buffers live in the
rest, and the cuBLAS/cuDNN workspaces XLA needs are outputs of the program's custom calls, so they
are already in its temporaries. Each capacity carries the sentence that says so.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from hloscope.devices import JAX_DEFAULT_GPU_MEMORY_FRACTION, Device, get_device, memory_budget
from hloscope.parsers.compile_log import CompileLog
from hloscope.parsers.gpu_target_config import GpuTarget
from hloscope.units import format_bytes


@dataclass(frozen=True, slots=True)
class Capacity:
    bytes: int
    source: str
    device: str | None = None
    note: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def device_capacity(device: Device) -> Capacity | None:
    budget = memory_budget(device)
    if budget is None:
        return None
    if device.backend != "gpu":
        return Capacity(budget, f"usable HBM of one {device.description} device "
                                "(measured from libtpu's OOM verdicts)", device.name)
    total = device.usable_memory_bytes or 0
    note = (f"{JAX_DEFAULT_GPU_MEMORY_FRACTION:.0%} of the {format_bytes(total)} CUDA reports "
            "(JAX's default allocator share; XLA_CLIENT_MEM_FRACTION changes it): the CUDA "
            "context and runtime buffers use the rest, and cuBLAS/cuDNN workspaces are program "
            "temporaries, already counted")
    return Capacity(budget, f"JAX's share of one {device.description}", device.name, note)


def compiled_gpu_capacity(target: GpuTarget) -> Capacity:
    """JAX's share of the memory the GPU a dump was compiled on reported."""
    note = (f"{JAX_DEFAULT_GPU_MEMORY_FRACTION:.0%} of the {format_bytes(target.memory_bytes)} "
            f"it reported ({target.source}; XLA_CLIENT_MEM_FRACTION changes the share)")
    return Capacity(int(target.memory_bytes * JAX_DEFAULT_GPU_MEMORY_FRACTION),
                    f"JAX's share of the {target.description} the program was compiled on",
                    None, note)


def resolve_capacity(given: int | None, device_name: str | None, log: CompileLog | None,
                     target_device: str | None,
                     gpu_target: GpuTarget | None = None) -> Capacity | None:
    """The capacity to judge against, or None when nothing states one."""
    if given is not None:
        return Capacity(given, "--capacity")
    if device_name is not None:
        return device_capacity(get_device(device_name))
    stated = None if log is None else log.available_bytes
    if log is not None and stated is not None:
        return Capacity(stated, f"the compiler's OOM message ({log.source})")
    if gpu_target is not None:
        return compiled_gpu_capacity(gpu_target)
    if target_device is not None:
        return device_capacity(get_device(target_device))
    return None
