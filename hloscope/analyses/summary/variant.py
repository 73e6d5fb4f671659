"""The figures a sweep ranks a build by: fit, memory, FLOPs, recompute and a step estimate (no jax).

Sources, each independent of the others:

- **fit**: on TPU, libtpu's own verdict (the compile succeeds or fails with RESOURCE_EXHAUSTED);
  on GPU, where compiles never fail for memory, the allocation (memory_analysis: arguments +
  outputs + temporaries - aliased) against the device's budget (`devices.memory_budget`: JAX's
  default 75% of the memory CUDA reports); on CPU there is no capacity, so fit is unknown.
- **memory**: the device total of XLA's memory-usage report (the default memory space: HBM on
  TPU and GPU), which is the figure libtpu's OOM message compares with the usable HBM and on GPU
  equals the allocation; without the report, memory_analysis's allocation (arguments + outputs +
  temporaries - aliased; on TPU it overcounts, temporaries reuse donated arguments) or the OOM
  message's figure (`required_source` says which). The live peak (hloscope.analyses.memory.analysis:
  logical buffers live at once, from the HLO text) is a different figure, kept apart.
  `predicted_fits` compares the memory with the device table's capacity: on TPU a check of
  libtpu's verdict; `live_peak_fits` does the same with the live peak.
- **FLOPs, bytes, collective bytes, recompute**: hloscope's own analyses of the optimized HLO
  (hloscope.analyses.cost.flops / remat, loop trip counts applied); loops whose trip count could
  not be established count once and make the FLOPs a lower bound (`unknown_loops`).
- **host offload**: hloscope.analyses.memory.host_offload (bytes moved to and from S(5)).
- **host memory**: a program that keeps buffers in pinned host memory fits only if its hosts can
  hold them: the pinned host bytes one device needs (memory_analysis' host arguments + outputs +
  temporaries - aliased; without it, space 5 of XLA's memory-usage report) x the devices that
  share one host, against that host's RAM (`devices.Device.host_memory_bytes`). A host that
  cannot hold them makes the variant `fits: false` whatever the device verdict; where the host's
  RAM is unknown the fit is not refused and `host_fit` says it was not checked. Sub-host slices
  are judged as a full host: their VMs get RAM in proportion to their chips.
- **step time**: hloscope.analyses.roofline from the device facts. `step_seconds` (and
  tokens/s, which ranks) is the overlapped bound; the serial bound is in `step`.

The build comes loaded (`loader.build.load_build`: its HLO, report total and log read there);
nothing here reads a file.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from hloscope.analyses.cost.collectives import CollectivesResult
from hloscope.analyses.memory.checkpoint_names import KEPT, DeviceShapes, NameRow, name_rows
from hloscope.analyses.roofline import StepEstimate, estimate_step
from hloscope.analyses.steptime.result import StepTime
from hloscope.configs.config import LAYER_INPUT
from hloscope.dataframes import Rendered
from hloscope.devices import Device, memory_budget
from hloscope.errors import HloscopeError
from hloscope.formats.build import BuildFolder
from hloscope.formats.checkpoint_names import CheckpointName
from hloscope.formats.compile_record import MemoryFigures
from hloscope.loader.build import LoadedBuild
from hloscope.model.module import HloModule
from hloscope.parsers.libtpu_log import LibtpuRemat
from hloscope.units import format_bytes

GPU_REMAT_WARNING = "Can't reduce memory use below"


@dataclass(frozen=True)
class HloFigures:
    """What hloscope's analyses say about an optimized program (per device, per step)."""

    total_flops: int
    bytes_accessed: int
    collective_bytes: int
    forward_flops: int
    recompute_flops: int
    recompute_overhead: float
    to_host_bytes: int
    from_host_bytes: int
    unknown_loops: int
    parameter_bytes: int
    live_peak_bytes: int | None  # hloscope.analyses.memory.analysis: logical buffers live at once
    # hloscope.analyses.cost.collectives: collective payload over DCN (crossing TPU slices) and
    # over ICI (inside one); None when the build recorded no device assignment.
    dcn_collective_bytes: int | None = None
    ici_collective_bytes: int | None = None
    unknown_link_collective_bytes: int | None = None  # a group syntax hloscope cannot read
    # hloscope.analyses.cost.kernels: Pallas kernels (splash attention) XLA counts as nothing,
    # costed by their closed form; their FLOPs are part of total_flops.
    closed_form_flops: int = 0
    closed_form_kernels: tuple[str, ...] = ()
    # hloscope.analyses.cost.remat: FLOPs of XLA's own `.remat` clones (libtpu's recompute
    # under memory pressure); part of total_flops.
    xla_remat_flops: int = 0


@dataclass(frozen=True)
class HostFit:
    """Whether the pinned host memory a program needs fits the RAM of the hosts it runs on."""

    device: str  # the device's name, for the reason
    bytes_per_device: int  # pinned host memory one device's program allocates
    source: str  # where bytes_per_device comes from
    devices_per_host: int | None  # devices sharing one host's RAM; None when it is unknown
    host_memory_bytes: int | None

    @property
    def bytes_per_host(self) -> int | None:
        if self.devices_per_host is None:
            return None
        return self.bytes_per_device * self.devices_per_host

    @property
    def fits(self) -> bool | None:
        """None when the host's RAM is unknown (the fit is then not refused)."""
        return _within(self.bytes_per_host, self.host_memory_bytes)

    @property
    def reason(self) -> str:
        if self.bytes_per_host is None or self.host_memory_bytes is None:
            return (f"pinned host memory not checked: {format_bytes(self.bytes_per_device)} "
                    f"per device, the {self.device} host's RAM is not known")
        return (f"needs {format_bytes(self.bytes_per_host)} of pinned host memory per host "
                f"({format_bytes(self.bytes_per_device)} per device x {self.devices_per_host} "
                f"devices), the {self.device} host has {format_bytes(self.host_memory_bytes)}")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "bytes_per_host": self.bytes_per_host, "fits": self.fits,
                "reason": self.reason}


def host_fit(device: Device, bytes_per_device: int | None, source: str | None) -> HostFit | None:
    """The host-memory check of a program that pins `bytes_per_device` on the host (None when it
    pins nothing or the figure is unknown)."""
    if not bytes_per_device or source is None:
        return None
    return HostFit(device.name, bytes_per_device, source, device.devices_per_host,
                   device.host_memory_bytes)


@dataclass(frozen=True)
class VariantFigures:
    """One row of a sweep."""

    variant: str
    status: str
    batch: int
    tokens: int
    fits: bool | None
    fit_source: str | None
    capacity_bytes: int | None
    required_bytes: int | None
    required_source: str | None
    host_temp_bytes: int | None
    compile_seconds: float | None
    xla_flops: float | None  # cost_analysis(): loop bodies once
    hlo: HloFigures | None
    step: StepEstimate | None
    fingerprint: str | None
    error: str | None
    gpu_remat_warning: bool = False
    analysis_error: str | None = None  # hloscope could not analyse the optimized HLO
    host_fit: HostFit | None = None  # programs that pin host memory: does the host hold it?
    # the step's checkpoint names and the variant's decision on each (None: not recorded)
    checkpoint_names: tuple[NameRow, ...] | None = None
    libtpu_remat: LibtpuRemat | None = None  # libtpu recomputed under memory pressure
    step_time: StepTime | None = None  # the per-op model (analyses/steptime); None: no table

    @property
    def predicted_fits(self) -> bool | None:
        """The fit hloscope predicts from the dump and the device table: the device memory the
        buffer assignment needs within `capacity_bytes` (on TPU, a check of libtpu's verdict)."""
        return _within(self.required_bytes, self.capacity_bytes)

    @property
    def live_peak_fits(self) -> bool | None:
        """Whether the live peak (logical buffers live at once) is within capacity."""
        return _within(None if self.hlo is None else self.hlo.live_peak_bytes,
                       self.capacity_bytes)

    @property
    def flops_complete(self) -> bool:
        """False when a loop's trip count is unknown (its body counted once)."""
        return self.hlo is not None and self.hlo.unknown_loops == 0

    @property
    def step_seconds(self) -> float | None:
        """The step the sweep ranks by: the per-op model's where the device has a calibration,
        else the roofline's overlapped (optimistic) bound."""
        if self.step_time is not None:
            return self.step_time.seconds
        return None if self.step is None else self.step.overlapped_seconds

    @property
    def step_model(self) -> str | None:
        if self.step_time is not None:
            return "per-op"
        return None if self.step is None else "roofline (overlapped)"

    @property
    def serial_step_seconds(self) -> float | None:
        """The serial (pessimistic) bound: communication and host transfers after compute."""
        return None if self.step is None else self.step.serial_seconds

    @property
    def tokens_per_second(self) -> float | None:
        seconds = self.step_seconds
        return self.tokens / seconds if seconds else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["step"] = None if self.step is None else self.step.to_dict()
        data["step_time"] = None if self.step_time is None else self.step_time.to_dict()
        data["step_model"] = self.step_model
        data["host_fit"] = None if self.host_fit is None else self.host_fit.to_dict()
        data["checkpoint_names"] = names_dicts(self.checkpoint_names)
        data["libtpu_remat"] = None if self.libtpu_remat is None else self.libtpu_remat.to_dict()
        data["step_seconds"] = self.step_seconds
        data["serial_step_seconds"] = self.serial_step_seconds
        data["predicted_fits"] = self.predicted_fits
        data["live_peak_fits"] = self.live_peak_fits
        data["tokens_per_second"] = self.tokens_per_second
        return data


def _within(amount: int | None, capacity: int | None) -> bool | None:
    return None if amount is None or capacity is None else amount <= capacity


def hlo_figures(module: HloModule, build: BuildFolder) -> HloFigures:
    """hloscope's analyses of a build's optimized HLO (`build`: its recorded device
    assignment, which places collectives on ICI or DCN)."""
    return _figures_of(module, collective_links(module, build))


def _figures_of(module: HloModule, links: CollectivesResult | None) -> HloFigures:
    from hloscope.analyses.cost.flops import flops
    from hloscope.analyses.cost.remat import remat
    from hloscope.analyses.memory.analysis import live_peak_bytes
    from hloscope.analyses.memory.host_offload import host_transfers

    costs = flops(module)
    recomputed = remat(module)
    transfers = host_transfers(module)
    return HloFigures(
        total_flops=costs.total.flops, bytes_accessed=costs.total.bytes_accessed,
        collective_bytes=costs.total.collective_bytes, forward_flops=recomputed.forward_flops,
        recompute_flops=recomputed.recompute_flops,
        recompute_overhead=recomputed.recompute_overhead,
        to_host_bytes=transfers.to_host_bytes, from_host_bytes=transfers.from_host_bytes,
        unknown_loops=len(costs.unknown_loops),
        parameter_bytes=device_parameter_bytes(module),
        live_peak_bytes=live_peak_bytes(module)[0],
        dcn_collective_bytes=None if links is None else links.dcn_bytes,
        ici_collective_bytes=None if links is None else links.ici_bytes,
        unknown_link_collective_bytes=None if links is None else links.unknown_bytes,
        closed_form_flops=costs.closed_form_flops,
        closed_form_kernels=tuple(c.kernel for c in costs.closed_form),
        xla_remat_flops=recomputed.xla_remat_flops)


def per_op_step(loaded: LoadedBuild, compute_dtype: str,
                links: CollectivesResult | None) -> StepTime | None:
    """The per-op model's step of a build (None without a calibration or a readable
    program); collectives go on the link the build's device assignment puts them on
    (`links`, `collective_links`' answer)."""
    from hloscope.analyses.steptime import step_time

    target = loaded.build.parsed_target
    if loaded.module is None:
        return None
    placed = {} if links is None else {(row.computation, row.instruction): row.link
                                       for row in links.rows}
    torus = target.topology_dims if target.backend == "tpu" else None
    try:
        return step_time(loaded.module, target.device, compute_dtype, torus=torus,
                         link_of=lambda computation, name: _link(placed, computation, name))
    except HloscopeError:
        return None


def _link(placed: dict[tuple[str, str], str], computation: str, name: str) -> str:
    link = placed.get((computation, name), "ici")
    return "dcn" if link == "dcn" else "ici"


def collective_links(module: HloModule, build: BuildFolder) -> CollectivesResult | None:
    """The build's collectives by link, from the device assignment its compile recorded (a
    single-slice target without one: every device in slice 0); None when it is not known."""
    from hloscope.analyses.cost.collectives import collectives

    slices = build.result.slice_of_logical_device
    if slices is None and build.parsed_target.num_slices == 1:
        slices = [0] * build.parsed_target.num_devices
    return None if slices is None else collectives(
        module, slices, slice_of_id=build.result.slice_of_device_id)


def device_parameter_bytes(module: HloModule) -> int:
    """Padded bytes of the entry parameters that live in device memory (not in S(5))."""
    leaves = [leaf for parameter in module.entry.parameters
              for _, leaf in parameter.shape.leaves() if leaf.is_array]
    return sum(leaf.padded_byte_size for leaf in leaves if leaf.memory_space != 5)


def variant_figures(loaded: LoadedBuild, variant: str) -> VariantFigures:
    """The row of a loaded build (`loader.build.load_build`), named `variant`."""
    build = loaded.build
    result = build.result
    config = build.config
    target = build.parsed_target
    hlo, links, analysis_error = _analysed(loaded)
    capacity = memory_budget(target.device)
    required, source = _required(loaded)
    fits, fit_source = _fit(result.status, target.backend, required, capacity)
    host = host_fit(target.device, *pinned_host_bytes(result.memory, loaded.reported_host_bytes))
    fits, fit_source = with_host_fit(fits, fit_source, host)
    step = None if hlo is None else _estimate(hlo, target.device, config.compute_dtype,
                                              target.num_slices)
    timed = None if hlo is None else per_op_step(loaded, config.compute_dtype, links)
    return VariantFigures(
        variant=variant, status=result.status, batch=config.batch, tokens=config.tokens,
        fits=fits, fit_source=fit_source, capacity_bytes=capacity, required_bytes=required,
        required_source=source,
        host_temp_bytes=None if result.memory is None else result.memory.host_temp_bytes,
        compile_seconds=result.compile_seconds,
        xla_flops=None if result.cost is None else result.cost.flops, hlo=hlo, step=step,
        fingerprint=build.manifest.get("fingerprint"), error=result.error,
        gpu_remat_warning=target.backend == "gpu" and GPU_REMAT_WARNING in loaded.log_text,
        analysis_error=analysis_error,
        host_fit=host, checkpoint_names=checkpoint_names(loaded),
        libtpu_remat=loaded.libtpu_remat, step_time=timed)


def checkpoint_names(loaded: LoadedBuild) -> tuple[NameRow, ...] | None:
    """The recorded names, the kept ones beside the live buffers at the peak that may hold them
    (memory's live set: computed only when a name is kept)."""
    names = loaded.checkpoint_names
    if names is None:
        return None
    live = None
    if loaded.module is not None and any(n.decision in KEPT for n in names):
        from hloscope.analyses.memory.analysis import memory

        try:
            live = memory(loaded.module).live_at_peak
        except HloscopeError:  # not scheduled, or not analysable: the names stay unmatched
            live = None
    return name_rows(names, live, _device_shapes(loaded))


def _device_shapes(loaded: LoadedBuild) -> DeviceShapes | None:
    """Per-device shapes of the recorded names: the built-in block's closed form under the
    build's mesh (`spec.tensors.device_shape`); on one device the traced shape; else None."""
    from hloscope.configs.tensors import device_shape

    build = loaded.build
    mesh = build.manifest.get("mesh") or {}
    config = build.model_config
    if config is not None and mesh:
        batch_ways = (mesh["dcn_data_parallelism"] * mesh["ici_data_parallelism"]
                      * mesh["ici_fsdp_parallelism"])
        tensor_ways = mesh["ici_tensor_parallelism"]

        def local(name: CheckpointName) -> tuple[int, ...] | None:
            # the block's input (offload_carries) is [b, s, h] whole on every device, as norm1
            block_name = "norm1" if name.name == LAYER_INPUT else name.name
            return device_shape(block_name, name.shape, config, batch_ways, tensor_ways)

        return local
    if build.parsed_target.num_devices == 1:
        return lambda name: name.shape
    return None


def names_dicts(rows: tuple[NameRow, ...] | None) -> list[dict[str, Any]] | None:
    return None if rows is None else [row.to_dict() for row in rows]


def _estimate(hlo: HloFigures, device: Device, compute_dtype: str,
              num_slices: int) -> StepEstimate:
    return estimate_step(
        device, compute_dtype, hlo.total_flops, hlo.bytes_accessed, hlo.collective_bytes,
        hlo.to_host_bytes, hlo.from_host_bytes, ici_bytes=hlo.ici_collective_bytes,
        dcn_bytes=hlo.dcn_collective_bytes,
        unknown_link_bytes=hlo.unknown_link_collective_bytes or 0, num_slices=num_slices)


def pinned_host_bytes(memory: MemoryFigures | None,
                      reported: int | None) -> tuple[int | None, str | None]:
    """Pinned host memory one device's program allocates, and where the figure comes from:
    memory_analysis' host arguments + outputs + temporaries - aliased, else the host space's
    total in XLA's memory-usage report (`reported`)."""
    if memory is not None:
        pinned = (memory.host_argument_bytes + memory.host_output_bytes
                  + memory.host_temp_bytes - memory.host_alias_bytes)
        if pinned:
            return pinned, "memory_analysis host allocation"
    if reported:
        return reported, "XLA memory-usage report (host memory space)"
    return None, None


def with_host_fit(fits: bool | None, fit_source: str | None,
                  host: HostFit | None) -> tuple[bool | None, str | None]:
    """The device verdict, overruled when the hosts cannot hold what the program pins there."""
    if host is not None and host.fits is False and fits is not False:
        return False, "pinned host memory vs the host's RAM"
    return fits, fit_source


def _analysed(loaded: LoadedBuild) -> tuple[HloFigures | None, CollectivesResult | None,
                                             str | None]:
    """hlo_figures and the collectives by link, or None and the reason when hloscope cannot
    read or analyse the program (None and None when the build has none)."""
    if loaded.module is None:
        return None, None, loaded.load_error
    try:
        links = collective_links(loaded.module, loaded.build)
        return _figures_of(loaded.module, links), links, None
    except HloscopeError as error:
        return None, None, str(error).splitlines()[0]


def _required(loaded: LoadedBuild) -> tuple[int | None, str | None]:
    result = loaded.build.result
    if loaded.reported_device_bytes is not None:
        return loaded.reported_device_bytes, "XLA memory-usage report (default memory space)"
    if result.memory is not None:
        return result.memory.allocated_bytes, "memory_analysis allocation"
    temporaries = oom_temporaries(result.error or "")
    if temporaries is not None:
        return temporaries, "XLA's OOM message"
    return None, None


def oom_temporaries(error: str) -> int | None:
    """Bytes an XLA TPU OOM message states as required (printed as e.g. `49.46G`)."""
    from hloscope.parsers.compile_log import parse_compile_log

    verdict = parse_compile_log(error).compile_verdict
    return None if verdict is None else verdict.required_bytes


def _fit(status: str, backend: str, required: int | None,
         capacity: int | None) -> tuple[bool | None, str | None]:
    if status == "oom":
        return False, "compiler verdict (RESOURCE_EXHAUSTED)"
    if status != "ok":
        return None, None
    if backend == "tpu":
        return True, "compiler verdict"
    if required is None or capacity is None:
        return None, None
    return required <= capacity, "memory vs JAX's GPU budget"


@dataclass(frozen=True)
class BuildSummary(Rendered):
    """A build folder, the figures a sweep would rank it by, and whether the cache gave it."""

    build: BuildFolder
    figures: VariantFigures
    cached: bool = False

    @property
    def passed(self) -> bool:
        """Compiled, and not known not to fit (`hloscope build` exits 1 otherwise)."""
        return self.figures.status == "ok" and self.figures.fits is not False

    def to_dict(self) -> dict[str, Any]:
        return {"folder": str(self.build.folder), "cache_hit": self.cached,
                "manifest": self.build.manifest, "figures": self.figures.to_dict()}
