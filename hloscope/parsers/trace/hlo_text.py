"""An HloModuleProto printed as HLO text, so the HLO a trace embeds is read like a dump.

A profile's `/host:metadata` plane carries each program's HloProto (see `xplane.py`). hloscope's
model is built from HLO text, so the module is printed in XLA's text syntax and parsed by the one
text parser: every analysis (FLOPs, remat, phases, memory) then reads it as it reads a dump.

Printed: shapes with layouts, operands, the schedule's instruction order (`is_scheduled=true`),
`input_output_alias`, called computations under the keys XLA prints for each opcode, `metadata`
(op_type, op_name, source file and line), `backend_config` (so `known_trip_count` is seen),
`dimensions`, `index`, `direction`, `slice`, `dynamic_slice_sizes`, `window`, dot dimension
numbers, gather and scatter dimension numbers and slice sizes, fusion `kind`,
`custom_call_target`, and a collective's `channel_id`, `replica_groups` (explicit, or iota as
`[G,S]<=[dims]T(perm)`, from whichever field the writer used) and `use_global_device_ids`. Not
printed (not declared in the schema): literals (constants print as `constant({...})`),
convolution dimension numbers, shardings. A program that
needs them (a convolution's FLOPs) should be read from its dump (`--hlo`). The test suite
checks that FLOPs per phase and the memory timeline of the printed module equal those of XLA's
own text dump of the same program.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from hloscope.parsers.xla_memory.hlo_proto import render_shape

# XLA's HloInstruction called_computations() order per opcode (while: body, condition).
_CALLED_KEYS = {
    "fusion": ("calls",), "while": ("body", "condition"), "call": ("to_apply",),
    "async-start": ("calls",), "select-and-scatter": ("select", "scatter"),
    "conditional": ("branch_computations",), "custom-call": ("called_computations",),
}
_LIST_KEYS = frozenset({"branch_computations", "called_computations"})
_ALIAS_KINDS = {1: "may-alias", 2: "must-alias"}


def module_text(proto: Any) -> str:
    """HLO text of an `xla.HloModuleProto` message (see the module docstring)."""
    names = {c.id: c.name for c in proto.computations}
    ids = {i.id: i.name for c in proto.computations for i in c.instructions}
    order = {key: list(value.instruction_ids) for key, value in proto.schedule.sequences.items()}
    entry_id = proto.entry_computation_id
    computations = sorted(proto.computations, key=lambda c: c.id == entry_id)
    lines = [_header(proto)]
    for computation in computations:
        lines.extend(_computation(computation, computation.id == entry_id, names, ids,
                                  order.get(computation.id)))
    return "\n".join(lines) + "\n"


def _header(proto: Any) -> str:
    parts = [f"HloModule {proto.name}"]
    if proto.schedule.sequences:
        parts.append("is_scheduled=true")
    entries = [f"{_braces(e.output_shape_index)}: ({e.parameter_number}, "
               f"{_braces(e.parameter_shape_index)}, {_ALIAS_KINDS.get(e.kind, 'may-alias')})"
               for e in proto.input_output_alias.entries]
    if entries:
        parts.append("input_output_alias={ " + ", ".join(entries) + " }")
    return ", ".join(parts)


def _computation(computation: Any, is_entry: bool, names: dict[int, str], ids: dict[int, str],
                 schedule: list[int] | None) -> Iterator[str]:
    by_id = {i.id: i for i in computation.instructions}
    ordered = [by_id[i] for i in schedule if i in by_id] if schedule else \
        list(computation.instructions)
    ordered += [i for i in computation.instructions if i not in ordered]
    yield f"{'ENTRY ' if is_entry else ''}%{computation.name} {{"
    for instruction in ordered:
        root = "ROOT " if instruction.id == computation.root_id else ""
        yield f"  {root}{_instruction(instruction, names, ids)}"
    yield "}"
    yield ""


def _instruction(proto: Any, names: dict[int, str], ids: dict[int, str]) -> str:
    if proto.opcode == "parameter":
        operands = str(proto.parameter_number)
    elif proto.opcode == "constant":
        operands = "{...}"
    else:
        operands = ", ".join(f"%{ids[i]}" for i in proto.operand_ids if i in ids)
    attributes = [*_called(proto, names), *_attributes(proto)]
    tail = "".join(f", {a}" for a in attributes)
    return f"%{proto.name} = {render_shape(proto.shape)} {proto.opcode}({operands}){tail}"


def _called(proto: Any, names: dict[int, str]) -> Iterator[str]:
    called = [f"%{names[i]}" for i in proto.called_computation_ids if i in names]
    if not called:
        return
    keys = _CALLED_KEYS.get(proto.opcode, ("to_apply",))
    if keys[0] in _LIST_KEYS:
        yield f"{keys[0]}={{{', '.join(called)}}}"
        return
    for key, name in zip(keys, called, strict=False):
        yield f"{key}={name}"


def _attributes(proto: Any) -> Iterator[str]:
    if proto.fusion_kind:
        yield f"kind={proto.fusion_kind}"
    if proto.opcode == "get-tuple-element":
        yield f"index={proto.tuple_index}"
    if proto.dimensions:
        yield f"dimensions={_braces(proto.dimensions)}"
    if proto.slice_dimensions:
        yield "slice={" + ", ".join(f"[{d.start}:{d.limit}:{d.stride}]"
                                    for d in proto.slice_dimensions) + "}"
    if proto.dynamic_slice_sizes:
        yield f"dynamic_slice_sizes={_braces(proto.dynamic_slice_sizes)}"
    if proto.window.dimensions:
        yield f"window={_window(proto.window)}"
    if proto.comparison_direction:
        yield f"direction={proto.comparison_direction}"
    yield from _dot_dimensions(proto)
    if proto.opcode == "gather":
        yield from _gather_dimensions(proto)
    elif proto.opcode == "scatter":
        yield from _scatter_dimensions(proto)
    if proto.custom_call_target:
        yield f"custom_call_target={json.dumps(proto.custom_call_target)}"
    yield from _collective(proto)
    yield from _metadata(proto.metadata)
    if proto.backend_config:
        yield f"backend_config={_backend_config(proto.backend_config)}"


def _dot_dimensions(proto: Any) -> Iterator[str]:
    numbers = proto.dot_dimension_numbers
    for key, values in (("lhs_batch_dims", numbers.lhs_batch_dimensions),
                        ("lhs_contracting_dims", numbers.lhs_contracting_dimensions),
                        ("rhs_batch_dims", numbers.rhs_batch_dimensions),
                        ("rhs_contracting_dims", numbers.rhs_contracting_dimensions)):
        if values:
            yield f"{key}={_braces(values)}"


_GATHER = ("offset_dims", "collapsed_slice_dims", "start_index_map", "index_vector_dim")
_GATHER_BATCHING = ("operand_batching_dims", "start_indices_batching_dims")
_SCATTER = ("update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
            "index_vector_dim")
_SCATTER_BATCHING = ("input_batching_dims", "scatter_indices_batching_dims")


def _gather_dimensions(proto: Any) -> Iterator[str]:
    yield from _dimension_numbers(proto.gather_dimension_numbers, _GATHER, _GATHER_BATCHING)
    yield f"slice_sizes={_braces(proto.gather_slice_sizes)}"


def _scatter_dimensions(proto: Any) -> Iterator[str]:
    yield from _dimension_numbers(proto.scatter_dimension_numbers, _SCATTER, _SCATTER_BATCHING)


def _dimension_numbers(numbers: Any, names: tuple[str, ...],
                       batching: tuple[str, ...]) -> Iterator[str]:
    """XLA's printing: every listed field, the batching ones only when there are any."""
    for name in names + (batching if getattr(numbers, batching[0]) else ()):
        value = getattr(numbers, name)
        yield f"{name}={value}" if isinstance(value, int) else f"{name}={_braces(value)}"


def _collective(proto: Any) -> Iterator[str]:
    """channel_id, replica_groups and use_global_device_ids as XLA prints them."""
    if proto.channel_id:
        yield f"channel_id={proto.channel_id}"
    groups = _replica_groups(proto)
    if groups is not None:
        yield f"replica_groups={groups}"
    if proto.use_global_device_ids:
        yield "use_global_device_ids=true"


def _replica_groups(proto: Any) -> str | None:
    """The groups from the instruction's iota list (newer XLA), its device list's iota list
    (older libtpu) or explicit groups (in the device list or the instruction)."""
    device_list = proto.collective_device_list
    for iota in (proto.iota_collective_device_list, device_list.iota_replica_group_list):
        if iota.num_replica_groups:
            return _iota(iota)
    explicit = device_list.replica_groups or proto.replica_groups
    if not explicit:
        return None
    return "{" + ",".join(_braces(group.replica_ids) for group in explicit) + "}"


def _iota(iota: Any) -> str:
    """`[G,S]<=[dims]`, with `T(perm)` unless the permutation is the identity."""
    dims, perm = list(iota.iota_reshape_dims), list(iota.iota_transpose_perm)
    text = f"[{iota.num_replica_groups},{iota.num_devices_per_group}]<=[{','.join(map(str, dims))}]"
    if perm and perm != sorted(perm):
        text += f"T({','.join(map(str, perm))})"
    return text


def _window(window: Any) -> str:
    dims = list(window.dimensions)
    fields = [("size", [d.size for d in dims]), ("stride", [d.stride for d in dims]),
              ("lhs_dilate", [d.base_dilation or 1 for d in dims]),
              ("rhs_dilate", [d.window_dilation or 1 for d in dims])]
    text = [f"{key}={'x'.join(map(str, values))}" for key, values in fields]
    text.insert(2, "pad=" + "x".join(f"{d.padding_low}_{d.padding_high}" for d in dims))
    return "{" + " ".join(text) + "}"


def _metadata(metadata: Any) -> Iterator[str]:
    items = [(key, getattr(metadata, key)) for key in ("op_type", "op_name", "source_file")]
    text = [f"{key}={json.dumps(value)}" for key, value in items if value]
    if metadata.source_line:
        text.append(f"source_line={metadata.source_line}")
    if text:
        yield "metadata={" + " ".join(text) + "}"


def _backend_config(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    return text if text.lstrip().startswith("{") else json.dumps(text)


def _braces(values: Any) -> str:
    return "{" + ",".join(map(str, values)) + "}"
