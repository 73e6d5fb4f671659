"""The device mesh a train step runs on, from the config and the target's slices (no jax).

Two layouts:

- **single-axis** (one slice, no mesh option stated): the mesh the fixtures were made with, a
  `data` axis over every device (the batch is split over it; with `fsdp` the weights too), and a
  `tensor` axis when `tensor_parallel` > 1. Kept as it was, so those programs do not change.
- **hybrid** (several slices, or any of `dcn_data_parallel` / `ici_fsdp_parallel` stated), as
  MaxText's `create_hybrid_device_mesh` and Levanter's mesh: axes (`data`, `fsdp`, `tensor`) of
  sizes (dcn_data x ici_data, ici_fsdp, ici_tensor). The devices, sorted by (slice_index, id),
  are reshaped to (slices, ici_data, ici_fsdp, ici_tensor) and the first two axes merged, so
  that `data` runs over the slices (DCN) and within a slice (ICI data), while `fsdp` and
  `tensor` stay inside one slice (ICI). The batch is split over `data` x `fsdp`, the weights
  over `fsdp` (and `tensor`): data parallelism over DCN, FSDP over ICI.

Defaults as MaxText and Levanter: DCN data parallelism = the number of slices (only data
parallelism crosses slices in this model); ICI FSDP = every device of a slice that tensor
parallelism leaves, when the config shards (`fsdp`; the Llama presets), else 1 (plain data
parallelism inside the slice). An `ici_fsdp_parallel` below that leaves the rest to ICI data
parallelism (MaxText's `ici_data_parallelism = -1`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from hloscope.errors import UsageError

DATA, FSDP, TENSOR = "data", "fsdp", "tensor"


class MeshConfig(Protocol):
    """The config fields a mesh is planned from (TransformerConfig and a user's StepConfig)."""

    @property
    def tensor_parallel(self) -> int: ...
    @property
    def fsdp(self) -> bool: ...
    @property
    def dcn_data_parallel(self) -> int | None: ...
    @property
    def ici_fsdp_parallel(self) -> int | None: ...


@dataclass(frozen=True)
class MeshPlan:
    """Axis sizes of the train step's mesh; `hybrid` False is the single-axis layout."""

    num_slices: int
    dcn_data: int
    ici_data: int
    ici_fsdp: int
    ici_tensor: int
    hybrid: bool

    @property
    def axis_names(self) -> tuple[str, ...]:
        if self.hybrid:
            return (DATA, FSDP, TENSOR)
        return (DATA,) if self.ici_tensor == 1 else (DATA, TENSOR)

    @property
    def shape(self) -> tuple[int, ...]:
        """The mesh's shape, in `axis_names` order."""
        if self.hybrid:
            return (self.dcn_data * self.ici_data, self.ici_fsdp, self.ici_tensor)
        data = self.num_slices * self.ici_data * self.ici_fsdp
        return (data,) if self.ici_tensor == 1 else (data, self.ici_tensor)

    @property
    def device_shape(self) -> tuple[int, ...]:
        """How the (slice_index, id)-sorted devices are reshaped before `data` merges its
        DCN and ICI parts."""
        if not self.hybrid:
            return self.shape
        return (self.dcn_data, self.ici_data, self.ici_fsdp, self.ici_tensor)

    @property
    def batch_axes(self) -> tuple[str, ...]:
        """The axes the batch is split over."""
        return (DATA, FSDP) if self.hybrid else (DATA,)

    @property
    def batch_ways(self) -> int:
        return self.dcn_data * self.ici_data * self.ici_fsdp

    def describe(self) -> dict[str, int | bool]:
        """For manifests and reports: MaxText's names for each axis size."""
        return {"num_slices": self.num_slices, "dcn_data_parallelism": self.dcn_data,
                "ici_data_parallelism": self.ici_data,
                "ici_fsdp_parallelism": self.ici_fsdp,
                "ici_tensor_parallelism": self.ici_tensor, "hybrid": self.hybrid}


def states_mesh(config: MeshConfig) -> bool:
    """Whether the config states a mesh option (then the hybrid layout is used)."""
    return config.dcn_data_parallel is not None or config.ici_fsdp_parallel is not None


def plan_mesh(config: MeshConfig, num_slices: int, devices_per_slice: int) -> MeshPlan:
    """The mesh of `config` on `num_slices` slices of `devices_per_slice` devices each;
    UsageError when the stated sizes do not multiply to the devices."""
    tensor = config.tensor_parallel
    if devices_per_slice % tensor:
        raise UsageError(f"tensor parallelism {tensor} does not divide the {devices_per_slice} "
                         "devices of a slice (it runs over ICI, inside one slice)")
    hybrid = num_slices > 1 or states_mesh(config)
    if not hybrid:
        return MeshPlan(1, 1, devices_per_slice // tensor, 1, tensor, False)
    dcn = config.dcn_data_parallel or num_slices
    if dcn != num_slices:
        raise UsageError(f"DCN data parallelism {dcn} must equal the number of slices "
                         f"({num_slices}): only data parallelism crosses slices here")
    rest = devices_per_slice // tensor
    fsdp = config.ici_fsdp_parallel or (rest if config.fsdp else 1)
    if rest % fsdp:
        raise UsageError(f"ICI FSDP parallelism {fsdp} does not divide the {rest} devices of a "
                         f"slice left by tensor parallelism {tensor}")
    return MeshPlan(num_slices, dcn, rest // fsdp, fsdp, tensor, True)


# --- `--mesh` text: the same sizes in one string ------------------------------------------
MESH_AXES = {  # accepted name -> (axis, MaxText's option)
    "dcn_data": ("dcn_data", "--dcn-data-parallelism"),
    "data": ("dcn_data", "--dcn-data-parallelism"),
    "ici_data": ("ici_data", None),
    "fsdp": ("fsdp", "--ici-fsdp-parallelism"),
    "ici_fsdp": ("fsdp", "--ici-fsdp-parallelism"),
    "tensor": ("tensor", "--ici-tensor-parallelism"),
    "ici_tensor": ("tensor", "--ici-tensor-parallelism"),
}
MESH_EXAMPLE = "dcn_data=4,fsdp=128,tensor=1 (or data:4,fsdp:128)"


def parse_mesh_text(text: str) -> dict[str, int]:
    """`--mesh` as axis sizes {dcn_data, ici_data, fsdp, tensor} (those stated): comma-separated
    NAME=N or NAME:N, NAME one of MESH_AXES (`data` is the DCN data axis, as MaxText's
    `dcn_data_parallelism`; `ici_data` the data parallelism left inside a slice). UsageError
    naming the grammar for anything else."""
    sizes: dict[str, int] = {}
    for item in (part.strip() for part in text.split(",")):
        name, separator, value = item.replace(":", "=", 1).partition("=")
        name = name.strip().lower()
        if not separator or name not in MESH_AXES or not value.strip().isdigit() \
                or int(value) < 1:
            raise UsageError(f"bad --mesh item {item!r} in {text!r}: use NAME=N items, NAME in "
                             f"{', '.join(MESH_AXES)}, N >= 1, e.g. {MESH_EXAMPLE}")
        axis = MESH_AXES[name][0]
        if axis in sizes:
            raise UsageError(f"--mesh {text!r} states the {axis} axis twice")
        sizes[axis] = int(value)
    return sizes


def mesh_config_values(sizes: dict[str, int], num_slices: int,
                       devices_per_slice: int) -> dict[str, int]:
    """The config fields `--mesh` sizes stand for (dcn_data_parallel, ici_fsdp_parallel,
    tensor_parallel). The string states the whole mesh: unstated, dcn_data is the number of
    slices, fsdp and tensor are 1 and ici_data the rest of the devices; UsageError when the
    sizes do not multiply to the target's devices."""
    dcn = sizes.get("dcn_data", num_slices)
    fsdp, tensor = sizes.get("fsdp", 1), sizes.get("tensor", 1)
    devices = num_slices * devices_per_slice
    if "ici_data" in sizes:
        ici_data = sizes["ici_data"]
    elif devices % (dcn * fsdp * tensor) == 0:
        ici_data = devices // (dcn * fsdp * tensor)
    else:
        ici_data = 0
    product = dcn * ici_data * fsdp * tensor
    if product != devices:
        stated = " x ".join(f"{axis} {size}" for axis, size in sizes.items())
        raise UsageError(f"--mesh {stated} does not multiply to the target's {devices} devices "
                         f"({num_slices} slice(s) of {devices_per_slice})")
    return {"dcn_data_parallel": dcn, "ici_fsdp_parallel": fsdp, "tensor_parallel": tensor}
