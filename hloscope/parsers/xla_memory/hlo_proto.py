"""Reading XLA's protos: HloProto dumps, serialized buffer assignments and HloModuleProtos.

- `*.hlo.pb` (`--xla_dump_hlo_as_proto`): an HloProto. The after-optimizations one carries the
  module and its BufferAssignmentProto, heap-simulator traces included; other stages carry the
  module only.
- `compiled.memory_analysis().serialized_buffer_assignment_proto` (jax 0.10.2): a
  BufferAssignmentProto without heap traces, filled on CPU and empty on deviceless TPU and GPU
  compiles. Its logical buffers name instructions by id only; pass the module
  (`compiled.runtime_executable().hlo_modules()[0].as_serialized_hlo_module_proto()`) or name
  the values from the text dump of the same compile (`with_text_names`: value ids agree).

Values are converted to the same model as the text dumps (`BufferAssignment`), so every analysis
reads both. Proto-only facts are kept: `is_tuple`, `parameter_aliased_with_output` (field 13;
when an older proto lacks it and the module has input_output_alias entries, those decide), heap
traces, XLA's peak buffers and each logical buffer's own size.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from google.protobuf.message import DecodeError

from hloscope.errors import ParseError, SourceLocation
from hloscope.model.xla_memory import (
    ALLOC,
    FREE,
    SHARE_WITH,
    AssignedValue,
    BufferAllocation,
    BufferAssignment,
    HeapEvent,
    HeapTrace,
    HloProtoData,
    ProtoInstruction,
    ProtoModule,
)
from hloscope.parsers.xla_memory.proto_schema import PRIMITIVE_TYPES, message_class
from hloscope.parsers.xla_memory.reading import read_bytes

_TYPE_NAMES = {number: name.lower() for name, number in PRIMITIVE_TYPES}
_TYPE_NAMES.update({1: "pred", 14: "opaque", 13: "tuple"})
_EVENT_KINDS = {0: ALLOC, 1: FREE, 2: SHARE_WITH}


def read_hlo_proto(path: str | Path) -> HloProtoData:
    """Reads a `*.hlo.pb` dump (an HloProto)."""
    return parse_hlo_proto(read_bytes(path), str(path))


def parse_hlo_proto(data: bytes, source: str = "<bytes>") -> HloProtoData:
    proto = decode_message("xla.HloProto", data, source)
    module_proto = proto.hlo_module if proto.HasField("hlo_module") else None
    module = module_from_proto(module_proto) if module_proto is not None else None
    assignment = None
    if proto.HasField("buffer_assignment"):
        assignment = assignment_from_proto(proto.buffer_assignment, module_proto, source,
                                           module)
    return HloProtoData(module, assignment, source)


def parse_module_proto(data: bytes, source: str = "<bytes>") -> ProtoModule:
    """An HloModuleProto (e.g. `HloModule.as_serialized_hlo_module_proto()`)."""
    return module_from_proto(decode_message("xla.HloModuleProto", data, source))


def parse_buffer_assignment_proto(data: bytes, source: str = "<bytes>",
                                  module_data: bytes | None = None) -> BufferAssignment:
    """A BufferAssignmentProto, e.g. memory_analysis().serialized_buffer_assignment_proto;
    `module_data` is the serialized HloModuleProto of the same compile, for names and shapes."""
    module = None if module_data is None else decode_message("xla.HloModuleProto", module_data,
                                                             source)
    return assignment_from_proto(decode_message("xla.BufferAssignmentProto", data, source), module,
                                 source)


def with_text_names(assignment: BufferAssignment, text: BufferAssignment) -> BufferAssignment:
    """`assignment` (from a proto) with instruction names, indices and shapes taken from the
    text buffer assignment of the same compile, matched by value id."""
    named = text.by_id()
    allocations = []
    for allocation in assignment.allocations:
        values = tuple(_renamed(value, named.get(value.id)) for value in allocation.values)
        allocations.append(replace(allocation, values=values))
    return replace(assignment, allocations=tuple(allocations))


def _renamed(value: AssignedValue, text: tuple[BufferAllocation, AssignedValue] | None,
             ) -> AssignedValue:
    if text is None:
        return value
    source = text[1]
    return replace(value, instruction=source.instruction, shape_index=source.shape_index,
                   shape=source.shape, is_phi=source.is_phi)


def decode_message(full_name: str, data: bytes, source: str) -> Any:
    """A serialized `full_name` message (ParseError at the source when it is not one)."""
    message = message_class(full_name)()
    try:
        message.ParseFromString(data)
    except DecodeError as error:
        raise ParseError(f"not a serialized {full_name}: {error}",
                         SourceLocation(source, 1, 1)) from None
    return message


def module_from_proto(proto: Any) -> ProtoModule:
    instructions = tuple(
        ProtoInstruction(i.id, i.name, i.opcode, render_shape(i.shape), c.name,
                         i.metadata.op_name)
        for c in proto.computations for i in c.instructions)
    aliased = tuple((e.parameter_number, tuple(e.parameter_shape_index))
                    for e in proto.input_output_alias.entries)
    return ProtoModule(proto.name, proto.id, proto.entry_computation_name, instructions, aliased)


def assignment_from_proto(proto: Any, module_proto: Any | None, source: str = "<bytes>",
                          module: ProtoModule | None = None) -> BufferAssignment:
    """A BufferAssignment from a BufferAssignmentProto and (optionally) its HloModuleProto."""
    if module is None and module_proto is not None:
        module = module_from_proto(module_proto)
    instructions = module.by_id() if module else {}
    buffers = {buffer.id: buffer for buffer in proto.logical_buffers}
    shapes = {i.id: i.shape for c in getattr(module_proto, "computations", ())
              for i in c.instructions}
    trust_flag = any(a.is_parameter_aliased_with_output for a in proto.buffer_allocations)
    aliased = None if trust_flag or not module else set(module.aliased_parameters)
    allocations = tuple(
        _allocation(a, buffers, instructions, shapes, aliased) for a in proto.buffer_allocations)
    return BufferAssignment(
        allocations, source,
        heap_traces=tuple(_trace(trace) for trace in proto.heap_simulator_traces),
        peak_buffers=tuple((p.index, tuple(p.logical_buffer_ids)) for p in proto.peak_buffers),
        logical_buffer_sizes=tuple((b.id, b.size) for b in proto.logical_buffers))


def _allocation(proto: Any, buffers: dict[int, Any], instructions: dict[int, ProtoInstruction],
                shapes: dict[int, Any], aliased: set[tuple[int, tuple[int, ...]]] | None,
                ) -> BufferAllocation:
    parameter = proto.is_entry_computation_parameter
    index = tuple(proto.parameter_shape_index)
    flag = proto.is_parameter_aliased_with_output if aliased is None else \
        (proto.parameter_number, index) in aliased
    temp = not (parameter or proto.maybe_live_out or proto.is_thread_local or proto.is_constant)
    values = tuple(_value(a, buffers.get(a.logical_buffer_id), instructions, shapes)
                   for a in sorted(proto.assigned, key=lambda a: a.logical_buffer_id))
    return BufferAllocation(
        index=proto.index, size=proto.size, color=proto.color,
        parameter_number=proto.parameter_number if parameter else None,
        parameter_shape_index=index if parameter else None,
        is_constant=proto.is_constant, is_thread_local=proto.is_thread_local,
        maybe_live_out=proto.maybe_live_out, is_preallocated_temp=temp,
        is_tuple=proto.is_tuple, parameter_aliased_with_output=flag if parameter else None,
        values=values)


def _value(assigned: Any, buffer: Any, instructions: dict[int, ProtoInstruction],
           shapes: dict[int, Any]) -> AssignedValue:
    if buffer is None:
        return AssignedValue(assigned.logical_buffer_id, "", (), assigned.offset, assigned.size)
    location = buffer.defined_at
    instruction = instructions.get(location.instruction_id)
    name = instruction.name if instruction else location.instruction_name
    index = tuple(location.shape_index)
    shape = shapes.get(location.instruction_id)
    return AssignedValue(
        id=buffer.id, instruction=name, shape_index=index, offset=assigned.offset,
        size=assigned.size, shape=render_shape(_subshape(shape, index)) if shape else "",
        color=buffer.color, instruction_id=location.instruction_id)


def _subshape(shape: Any, index: tuple[int, ...]) -> Any:
    for position in index:
        if position >= len(shape.tuple_shapes):
            return shape
        shape = shape.tuple_shapes[position]
    return shape


def _trace(proto: Any) -> HeapTrace:
    events = tuple(
        HeapEvent(_EVENT_KINDS.get(e.kind, str(e.kind)), e.buffer_id, e.computation_name,
                  e.instruction_name, e.share_with_canonical_id if e.kind == 2 else None)
        for e in proto.events)
    return HeapTrace(events, proto.whole_module_simulation, proto.buffer_allocation_index)


def render_shape(shape: Any) -> str:
    """A ShapeProto as XLA prints it with its layout: `f32[8,128]{1,0:T(8,128)S(1)}`; tuples
    mark every fifth element `/*index=5*/`, scalars without a layout item print no braces."""
    type_name = _TYPE_NAMES.get(shape.element_type, str(shape.element_type))
    if type_name == "tuple":
        elements = ((f"/*index={i}*/" if i and i % 5 == 0 else "") + render_shape(s)
                    for i, s in enumerate(shape.tuple_shapes))
        return "(" + ", ".join(elements) + ")"
    text = f"{type_name}[{','.join(map(str, shape.dimensions))}]"
    layout = _render_layout(shape.layout) if shape.HasField("layout") else ""
    return f"{text}{{{layout}}}" if layout else text


def _render_layout(layout: Any) -> str:
    text = ",".join(map(str, layout.minor_to_major))
    items = "".join("(" + ",".join(map(str, tile.dimensions)) + ")" for tile in layout.tiles)
    extras = ("T" + items if items else "")
    if layout.element_size_in_bits:
        extras += f"E({layout.element_size_in_bits})"
    if layout.memory_space:
        extras += f"S({layout.memory_space})"
    return f"{text}:{extras}" if extras else text
