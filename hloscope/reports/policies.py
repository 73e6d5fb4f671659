"""The Report of `hloscope policies`: the block's named tensors and the policy families."""
from __future__ import annotations

from hloscope.reports.report import Column, Quantity, Report, Table
from hloscope.spec.policies import FAMILY_TABLE, NamedTensors


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
            "tensor axis (hloscope.spec.tensors)",
            "a per-tensor policy: names:NAME=device|offload|remat,... (unnamed tensors are "
            "recomputed; * sets every name)",
            *(f"{alias} = {expansion}" for alias, expansion in result.aliases.items())],
        data=result.to_dict(),
    )
