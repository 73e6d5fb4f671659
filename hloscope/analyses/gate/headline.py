"""The headline figures of one module: what `compare` sets side by side and `snapshot` keeps.

Every figure is per device (SPMD modules describe one device). Memory figures are None for an
unscheduled module (its buffers' lifetimes are unknown) and the XLA figures None without XLA's
dumps; `memory_note` then says why. The estimated step time needs a device.
"""
from __future__ import annotations

from dataclasses import dataclass

from hloscope.analyses.summary.overview import ModuleOverview
from hloscope.devices import Device
from hloscope.model.opcodes import OpCategory


@dataclass(frozen=True, slots=True)
class Metric:
    """One headline figure: `kind` is a report column kind (bytes, flops, int, percent, ...)."""

    key: str
    label: str
    kind: str
    value: int | float | None
    # how a larger value reads: "worse" (memory, FLOPs, remat) or "neutral" (counts of ops)
    direction: str = "worse"


def headline(item: ModuleOverview, device: Device | None = None) -> list[Metric]:
    inspected, costs, remat = item.inspect, item.flops.total, item.remat
    memory = item.memory
    categories = {} if memory is None else memory.by_category
    metrics = [
        Metric("peak_bytes", "live peak", "bytes", item.peak_bytes),
        Metric("allocation_bytes", "XLA allocation", "bytes", item.allocation_bytes),
        Metric("argument_bytes", "argument bytes", "bytes", inspected.parameter_bytes),
        Metric("output_bytes", "output bytes", "bytes", inspected.output_bytes),
        Metric("temporary_bytes", "temporaries at the peak", "bytes",
               None if memory is None else categories.get("temporary", 0)),
        Metric("total_flops", "FLOPs", "flops", costs.flops),
        Metric("recompute_flops", "recomputed FLOPs", "flops", remat.recompute_flops),
        Metric("recompute_overhead", "recompute overhead", "percent", remat.recompute_overhead),
        Metric("remat_instructions", "remat instructions (JAX)", "int", remat.remat_instructions),
        Metric("xla_remat_instructions", "remat clones (XLA)", "int",
               remat.xla_remat_instructions),
        Metric("bytes_accessed", "bytes accessed", "bytes", costs.bytes_accessed),
        Metric("instructions", "instructions", "int", inspected.instruction_count, "neutral"),
        Metric("fusions", "fusions", "int", inspected.op_counts.get("fusion", 0), "neutral"),
        Metric("collectives", "collectives", "int",
               inspected.category_counts.get(OpCategory.COLLECTIVE.value, 0)),
        Metric("collective_bytes", "collective bytes", "bytes", costs.collective_bytes),
    ]
    if device is not None:
        metrics.append(step_metric(device, costs.flops, costs.bytes_accessed,
                                   costs.collective_bytes))
    return metrics


def step_metric(device: Device, flops: float | None, bytes_accessed: float | None,
                collective_bytes: float | None) -> Metric:
    """The roofline step time (ms) of a per-device program on `device` (bf16 peak)."""
    from hloscope.analyses.roofline import estimate_step

    seconds = None
    if flops is not None and bytes_accessed is not None:
        seconds = estimate_step(device, "bfloat16", flops, bytes_accessed,
                                collective_bytes or 0).seconds
    return Metric("step_ms", f"est. step ms ({device.name})", "int",
                  None if seconds is None else seconds * 1000)

