"""The Report of `hloscope policies`: the block's named tensors and the policy families."""
from __future__ import annotations

from hloscope.configs.policies import FAMILY_TABLE, NamedTensors
from hloscope.configs.step import StepTensors
from hloscope.reports.paths import with_relative_sources
from hloscope.reports.report import Column, Quantity, Report, Table


def policies_report(result: NamedTensors) -> Report:
    tensors = Table("tensors", "Named tensors of one block (per device, per layer)", [
        Column("name", "name"), Column("maxtext", "MaxText's name"),
        Column("shape", "shape"), Column("bytes_per_layer", "bytes / layer", "bytes"),
        Column("what", "what", drop=1)],
        [{"name": row.name, "maxtext": row.maxtext or "-", "what": row.what,
          "shape": "[" + ", ".join(map(str, row.shape)) + "]",
          "bytes_per_layer": row.bytes_per_layer} for row in result.tensors])
    families = Table("families", "Policy families (--policy / --policies)", [
        Column("family", "family"), Column("what", "what")],
        [{"family": family, "what": what} for family, what in FAMILY_TABLE])
    return Report(
        name="policies",
        title=f"Remat policies of {result.model}",
        summary=[("target", result.target), ("batch ways", result.batch_ways),
                 ("tensor ways", result.tensor_ways), ("dtype", result.dtype),
                 ("all named tensors, per layer", Quantity(result.bytes_per_layer, "bytes"))],
        tables=[tensors, families],
        notes=[
            "per device, per layer and per micro-batch, closed form from the config: the "
            "batch split over the mesh's batch ways, the column-parallel widths over the "
            "tensor axis (hloscope.configs.tensors)",
            "a per-tensor policy: names:NAME=device|offload|remat,... (unnamed tensors are "
            "recomputed; * sets every name)",
            *(f"{alias} = {expansion}" for alias, expansion in result.aliases.items())],
        data=result.to_dict(),
    )


def step_policies_report(result: StepTensors) -> Report:
    """`hloscope policies --step`: the step's own checkpoint names, traced (global shapes)."""
    tensors = Table("tensors", "Checkpoint names of the step (traced: global, one call)", [
        Column("name", "name"), Column("shape", "shape"), Column("dtype", "dtype"),
        Column("bytes", "bytes / call", "bytes"), Column("source", "named at", drop=1)],
        with_relative_sources([{"name": row.name, "shape": "[" + ", ".join(map(str, row.shape))
                                + "]", "dtype": row.dtype, "bytes": row.bytes,
                                "source": row.source} for row in result.tensors]))
    return Report(
        name="policies",
        title=f"Checkpoint names of {result.factory}",
        summary=[("target", result.target), ("names", len(result.names))],
        tables=[tensors],
        notes=[
            "traced shapes (no compile): the global value of one call of the block, one layer "
            "inside a layer scan; the compile's sharding divides it per device",
            "a per-tensor policy: --policies names:NAME=device|offload|remat,... over these "
            "names (unnamed tensors are recomputed; * sets every name)"],
        data=result.to_dict(),
    )
