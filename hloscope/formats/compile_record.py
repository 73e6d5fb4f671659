"""What a compile produces: memory and cost figures, timing, versions and the verdict.

The record is written as the "compile" object of a build manifest and of capture.json.

`memory_analysis()` figures are XLA's *allocation* view (arguments + outputs + temporaries -
aliased); they are not the live-range peak (docs/memory.md). `peak_bytes` is copied as XLA reports
it and is not the real peak on CPU. `cost_analysis()` counts a loop body once and is None on
deviceless GPU compiles, so every cost field may be None.

`device_assignment` is the compiled program's device assignment: entry i is the device that
runs logical device i (SPMD partition i; replica-major when there are replicas), with its JAX id
and, on multislice TPU targets, its `slice_index`. Replica groups in the HLO name logical ids, so
this is what says whether a collective crosses slices (`hloscope.analyses.cost.collectives`).

A result always exists, even when the child crashed: `status` says which of ok, oom (the compile
failed with RESOURCE_EXHAUSTED: `error` holds XLA's message and the dump folder still explains
it), error, crash (the child died, e.g. SIGSEGV in libtpu: `log_tail` holds its last output) or
timeout.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

DUMP_FOLDER = "dump"
"""Where a compile's XLA dump goes, inside a build folder and a capture folder alike."""
LOG_FILE = "compile.log"
"""The compile process's output, beside its dump."""


@dataclass(frozen=True)
class MemoryFigures:
    """CompiledMemoryStats of one program, per device, in bytes."""

    argument_bytes: int
    output_bytes: int
    alias_bytes: int
    temp_bytes: int
    generated_code_bytes: int = 0
    host_argument_bytes: int = 0
    host_output_bytes: int = 0
    host_alias_bytes: int = 0
    host_temp_bytes: int = 0
    peak_bytes: int | None = None  # XLA's peak_memory_in_bytes, when the backend fills it

    @property
    def allocated_bytes(self) -> int:
        """Device bytes the program allocates: arguments + outputs + temporaries - aliased."""
        return self.argument_bytes + self.output_bytes + self.temp_bytes - self.alias_bytes

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryFigures:
        """From the figures as written, `allocated_bytes` (derived) among them or not."""
        return cls(**{k: v for k, v in data.items() if k != "allocated_bytes"})


@dataclass(frozen=True)
class CostFigures:
    """cost_analysis() totals (loop bodies counted once)."""

    flops: float | None = None
    bytes_accessed: float | None = None
    transcendentals: float | None = None
    optimal_seconds: float | None = None


@dataclass(frozen=True)
class CompileResult:
    """One compile of one program for one target."""

    target: str  # the target string, e.g. "tpu:v5e:2x2"
    status: str
    dump_dir: str
    module_name: str | None = None  # e.g. "jit_train_step"
    memory: MemoryFigures | None = None
    cost: CostFigures | None = None
    lower_seconds: float | None = None
    compile_seconds: float | None = None
    versions: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    log_tail: str | None = None
    returncode: int | None = None
    device_assignment: list[dict[str, Any]] | None = None  # logical id -> {"id", "slice_index"}

    @property
    def slice_of_logical_device(self) -> list[int] | None:
        """Each logical device's slice index (None when the compile did not record them)."""
        if not self.device_assignment:
            return None
        return [int(entry.get("slice_index") or 0) for entry in self.device_assignment]

    @property
    def slice_of_device_id(self) -> dict[int, int] | None:
        """Each device id's slice index (None when the compile did not record them)."""
        if not self.device_assignment:
            return None
        return {int(entry["id"]): int(entry.get("slice_index") or 0)
                for entry in self.device_assignment if entry.get("id") is not None}

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.memory is not None:
            data["memory"]["allocated_bytes"] = self.memory.allocated_bytes
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompileResult:
        values = dict(data)
        memory = values.get("memory")
        if memory is not None:
            values["memory"] = MemoryFigures.from_dict(memory)
        if values.get("cost") is not None:
            values["cost"] = CostFigures(**values["cost"])
        return cls(**values)
