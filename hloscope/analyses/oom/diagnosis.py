"""`diagnose`: why a program does not fit one device, and what would make it fit.

The verdict compares a required figure with the capacity. The figure is XLA's own when its data
gives one — the buffer assignment's device allocation (the default memory space: what libtpu
compares with the usable HBM), else the compiler's OOM message — and otherwise the allocation
estimated from the HLO text (`memory/heap.py`: XLA's buffer assignment replayed; on TPU its HBM
total, constants included, as libtpu compares it), labelled an estimate. memory_analysis() is
shown beside it when the build recorded it; on TPU it is libtpu's own count, not its criterion.
Everything is per device (one SPMD partition). The explanation is the live set at the peak
(`memory`): its categories, its largest buffers grouped by layer, where in the step it happens,
and sharding findings; remedies are predicted from it (`remedies.py`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from hloscope.analyses.cost.flops import flops
from hloscope.analyses.memory.analysis import MemoryResult, TimelineStep, memory, xla_figures
from hloscope.analyses.oom.analytic import (
    AnalyticView,
    analytic_view,
    fsdp_ways,
    local_batch,
    parameters_per_device,
)
from hloscope.analyses.oom.capacity import Capacity
from hloscope.analyses.oom.categories import (
    OPTIMIZER_STATE,
    SAVED_ACTIVATIONS,
    CategoryBytes,
    breakdown,
    category_bytes,
)
from hloscope.analyses.oom.groups import BufferGroup, ModelDims, group_buffers, stacked_layer_count
from hloscope.analyses.oom.inputs import OomInputs
from hloscope.analyses.oom.remedies import (
    PeakParts,
    Remedy,
    fsdp_remedy,
    gradient_bytes,
    micro_batch_remedies,
    optimizer_offload_remedy,
    rank_remedies,
    remat_remedies,
)
from hloscope.analyses.oom.sharding import ShardingFindings, sharding_findings
from hloscope.analyses.summary.variant import host_fit
from hloscope.configs.config import TransformerConfig, param_count
from hloscope.dataframes import DataFrames
from hloscope.devices import get_device
from hloscope.formats.sweep import SweepRow
from hloscope.parsers.compile_log import CompileLog

AROUND_STEPS = 3


@dataclass(frozen=True, slots=True)
class Required:
    bytes: int
    basis: str
    estimate: bool


@dataclass
class OomDiagnosis(DataFrames):
    module_name: str
    backend: str
    devices: int
    required: Required
    capacity: Capacity | None
    compiler_verdict: str | None
    memory: MemoryResult
    by_category: list[CategoryBytes]
    top_groups: list[BufferGroup]
    around_peak: list[TimelineStep]
    sharding: ShardingFindings
    remedies: list[Remedy]
    analytic: AnalyticView | None
    measured_saved_per_layer: int | None
    log: CompileLog | None
    notes: list[str] = field(default_factory=list)
    num_slices: int = 1  # TPU multislice: FSDP shards inside one slice

    @property
    def fits(self) -> bool | None:
        if self.compiler_verdict is not None:
            return False
        return None if self.capacity is None else self.required.bytes <= self.capacity.bytes

    @property
    def memory_analysis_bytes(self) -> int | None:
        """memory_analysis()'s allocation when the build recorded it: on TPU libtpu's own count
        (its temporaries are not the buffer assignment's), shown beside the verdict's figure."""
        xla = self.memory.xla
        return None if xla is None else xla.memory_analysis_bytes

    @property
    def margin_bytes(self) -> int | None:
        """Capacity minus what is required: negative when it does not fit."""
        return None if self.capacity is None else self.capacity.bytes - self.required.bytes

    def to_dict(self) -> dict:
        result = self.memory
        return {
            "module_name": self.module_name, "backend": self.backend, "devices": self.devices,
            "per_device": True, "fits": self.fits,
            "peak_bytes": self.required.bytes, "peak_basis": self.required.basis,
            "peak_is_estimate": self.required.estimate,
            "capacity_bytes": None if self.capacity is None else self.capacity.bytes,
            "capacity": None if self.capacity is None else self.capacity.to_dict(),
            "margin_bytes": self.margin_bytes, "compiler_verdict": self.compiler_verdict,
            "live_peak_bytes": result.peak_bytes,
            "allocation_bytes": None if result.xla is None else result.xla.allocation_bytes,
            "memory_analysis_bytes": self.memory_analysis_bytes,
            "by_category": [c.to_dict() for c in self.by_category],
            "top_groups": [g.to_dict() for g in self.top_groups],
            "peak": {"time": result.peak_time, "instruction": result.peak_instruction,
                     "op_name": result.peak_op_name, "phase": result.peak_phase,
                     "around": [s.to_dict() for s in self.around_peak]},
            "sharding": self.sharding.to_dict(),
            "remedies": [r.to_dict() for r in self.remedies],
            "analytic": None if self.analytic is None else self.analytic.to_dict(),
            "measured_saved_per_layer_bytes": self.measured_saved_per_layer,
            "layer_working_set": None if self.memory.layer_working_set is None
            else self.memory.layer_working_set.to_dict(),
            "log": None if self.log is None else self.log.to_dict(),
            "notes": self.notes,
        }


def diagnose(inputs: OomInputs, capacity: Capacity | None,
             sweep_rows: list[SweepRow] | None = None, top: int = 10,
             offloaded_sweep: bool = False, compiled_only: bool = False) -> OomDiagnosis:
    """`offloaded_sweep`: the sweep of `sweep_rows` was compiled with `optimizer_offload`, so
    its row of this build's own variant is the compiled `optimizer-offload` remedy.
    `compiled_only`: a user's step without a model config (`oom --step`): its remedies are the
    compiled `sweep_rows` alone."""
    module = inputs.module
    backend = inputs.program.backend
    xla = xla_figures(inputs.program, backend)
    layers = inputs.config.n_layers if inputs.config else stacked_layer_count(module)
    result = memory(module, backend=backend, xla=xla, stacked_layers=layers,
                    hbm_bytes=None if capacity is None else capacity.bytes)
    verdict = None if inputs.log is None else inputs.log.compile_verdict
    required = required_figure(result, backend, inputs.log, _tpu_hbm_total(inputs, backend))
    parts = breakdown(result.live_at_peak, backend)
    groups = group_buffers(result.live_at_peak, backend, layers, _dims(inputs))
    sharding = sharding_findings(module, result.live_at_peak, backend)
    diagnosis = OomDiagnosis(
        module.name, backend, inputs.devices or module.num_partitions, required, capacity,
        verdict.text if verdict else None, result, parts, groups[:top],
        _around(result), sharding, [], None, _saved_per_layer(groups), inputs.log,
        num_slices=inputs.num_slices)
    if inputs.config is not None:
        _model_view(diagnosis, inputs, groups, sweep_rows, offloaded_sweep)
    elif compiled_only and sweep_rows is not None:
        from hloscope.analyses.oom.compiled import COMPILED_ONLY_NOTE, compiled_remedies

        found = compiled_remedies(sweep_rows, flops(module).total.flops)
        diagnosis.remedies = rank_remedies(found, None if capacity is None else capacity.bytes)
        diagnosis.notes.append(COMPILED_ONLY_NOTE)
    diagnosis.notes = _notes(diagnosis, inputs, compiled_only)
    return diagnosis


def required_figure(result: MemoryResult, backend: str, log: CompileLog | None,
                    tpu_hbm_total: int | None = None) -> Required:
    xla = result.xla
    if tpu_hbm_total is not None:
        return Required(tpu_hbm_total, "XLA's buffer assignment: every HBM (default memory "
                        "space) allocation, the total libtpu compares with the usable HBM", False)
    if xla is not None and xla.allocation_bytes is not None:
        return Required(xla.allocation_bytes, "XLA's allocation (arguments + temporaries + "
                        "outputs - aliased, from the buffer assignment)", False)
    stated = None if log is None else (log.compile_verdict or log.first("remat-warning"))
    if stated is not None and stated.required_bytes is not None:
        return Required(stated.required_bytes, f"the compiler's message ({stated.kind})", False)
    hbm = result.allocation_estimate.space(0) if result.allocation_estimate else None
    if backend == "tpu" and hbm is not None:
        return Required(hbm.total_bytes, "HBM total estimated from the HLO text (libtpu's buffer "
                        "assignment replayed: every HBM allocation, constants included, the "
                        "figure libtpu compares with the usable HBM)", True)
    if result.estimated_allocation_bytes is not None:
        return Required(result.estimated_allocation_bytes, "allocation estimated from the HLO "
                        "text (XLA's buffer assignment replayed: arguments + temporaries + "
                        "outputs - aliased, with the heap's packing)", True)
    return Required(result.peak_bytes, "live peak from the HLO text (an estimate: XLA's "
                    "allocation adds packing and fragmentation)", True)


def _tpu_hbm_total(inputs: OomInputs, backend: str) -> int | None:
    """The default memory space's `Total bytes` (constants included) on TPU, from the dump."""
    if backend != "tpu":
        return None
    from hloscope.parsers.xla_memory import space_allocations

    assignment = inputs.program.buffer_assignment
    spaces = {} if assignment is None else {s.color: s for s in space_allocations(assignment)}
    return spaces[0].total_bytes if 0 in spaces else None


def _dims(inputs: OomInputs) -> ModelDims | None:
    config = inputs.config
    if config is None:
        return None
    batch = local_batch(config, inputs.devices or 1) // max(config.micro_batches, 1)
    return ModelDims(batch, config.seq_len, config.d_model,
                     config.d_ff, config.n_heads, config.kv_heads, config.head_dim, config.vocab)


def _around(result: MemoryResult) -> list[TimelineStep]:
    steps = result.timeline
    index = next((n for n, s in enumerate(steps) if s.time >= result.peak_time), len(steps) - 1)
    if index > 0 and steps[index].time > result.peak_time:
        index -= 1  # the peak is inside the previous step (a loop or call)
    return steps[max(index - AROUND_STEPS, 0): index + AROUND_STEPS + 1]


def _saved_per_layer(groups: list[BufferGroup]) -> int | None:
    saved = [g for g in groups if g.category == SAVED_ACTIVATIONS and g.layers > 1]
    if not saved:
        return None
    layers = max(g.layers for g in saved)
    return sum(g.bytes for g in saved) // layers


def _largest_saved(groups: list[BufferGroup]) -> int:
    saved = [g.bytes // max(g.layers, 1) for g in groups
             if g.category == SAVED_ACTIVATIONS and g.layers > 1]
    return max(saved, default=0)


def _model_view(diagnosis: OomDiagnosis, inputs: OomInputs, groups: list[BufferGroup],
                sweep_rows: list[SweepRow] | None, offloaded_sweep: bool = False) -> None:
    config: TransformerConfig = inputs.config  # type: ignore[assignment]
    devices = inputs.devices or 1
    parameters = param_count(config)
    diagnosis.analytic = analytic_view(config, devices, parameters)
    step_flops = flops(inputs.module).total.flops
    diagnosis.remedies = _remedies(diagnosis, config, groups, step_flops, sweep_rows,
                                   inputs.device, offloaded_sweep, inputs.variant)


def _with_backward_working_set(parts: PeakParts, result: MemoryResult) -> PeakParts:
    """Parts for the remat remedies, whose peak is in a layer's backward pass: R + ℓ (the
    temporaries at the peak and the largest per-layer saved buffer) is raised to the layer
    working set (working_set.py) where that is more: a peak in the forward pass holds no
    backward working set, and a program that saves its residuals reads them in place."""
    working = result.layer_working_set
    if working is None:
        return parts
    rest = max(parts.rest, working.total_bytes - parts.largest_saved_per_layer)
    return dataclasses.replace(parts, rest=rest)


def _remedies(diagnosis: OomDiagnosis, config: TransformerConfig, groups: list[BufferGroup],
              step_flops: int, sweep_rows: list[SweepRow] | None, device: str | None = None,
              offloaded_sweep: bool = False, variant: str | None = None) -> list[Remedy]:
    result = diagnosis.memory
    ratio = diagnosis.required.bytes / result.peak_bytes if result.peak_bytes else 1.0
    rematted = config.rematted_layers if config.remat != "none" else config.n_layers
    parts = PeakParts.from_breakdown(diagnosis.by_category, _largest_saved(groups), rematted,
                                     ratio)
    devices, slices = diagnosis.devices, diagnosis.num_slices
    batch = local_batch(config, devices)  # the per-shard batch (every micro-batch of it)
    capacity = None if diagnosis.capacity is None else diagnosis.capacity.bytes
    per_device_params = parameters_per_device(config, param_count(config), devices, slices)
    shards = max(param_count(config) // max(per_device_params, 1), 1)
    found = remat_remedies(_with_backward_working_set(parts, result), config,
                           batch // max(config.micro_batches, 1), step_flops, shards)
    found += micro_batch_remedies(parts, config, capacity, per_device_params, batch)
    optimizer = optimizer_offload_remedy(parts, config,
                                         category_bytes(diagnosis.by_category, OPTIMIZER_STATE),
                                         per_device_params)
    found += [r for r in (optimizer,) if r is not None]
    fsdp = None if config.fsdp else fsdp_remedy(parts, diagnosis.sharding,
                                               gradient_bytes(diagnosis.by_category),
                                               config.n_layers, config,
                                               fsdp_ways(config, devices, slices))
    found += [r for r in (fsdp,) if r is not None]
    found = [_host_checked(r, device) for r in found]
    if sweep_rows is not None:
        from hloscope.analyses.oom.compiled import attach_compiled

        found, unmatched = attach_compiled(found, sweep_rows, step_flops, offloaded_sweep,
                                           variant)
        if unmatched:
            diagnosis.notes.append("sweep variants without a remedy here: " + ", ".join(unmatched))
    return rank_remedies(found, capacity)


def _host_checked(remedy: Remedy, device: str | None) -> Remedy:
    """`remedy` with the sweep's host-memory check of what it pins (`HostFit`)."""
    if not remedy.host_bytes or device is None:
        return remedy
    check = host_fit(get_device(device), remedy.host_bytes, "closed form (docs/oom.md)")
    if check is None:
        return remedy
    return dataclasses.replace(remedy, host_fits=check.fits, host_reason=check.reason)


def _notes(diagnosis: OomDiagnosis, inputs: OomInputs,
           compiled_only: bool = False) -> list[str]:
    notes = list(diagnosis.notes)
    notes.append(f"figures are per device: the program is one of {diagnosis.devices} SPMD "
                 "partitions" if diagnosis.devices > 1 else "figures are per device")
    if diagnosis.required.estimate:
        notes.append("no XLA allocation or compiler message was found: the verdict is an "
                     "estimate from the HLO text (pass the dump folder for XLA's figure)")
    if diagnosis.capacity is None:
        notes.append("no capacity known: pass --device NAME or --capacity SIZE for a verdict")
    elif diagnosis.capacity.note:
        notes.append(f"capacity: {diagnosis.capacity.note}")
    if inputs.config is None and not compiled_only:
        notes.append("remedies need the model config: pass a `hloscope build` folder")
    return notes
