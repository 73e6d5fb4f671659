"""The subset of XLA's `xla/service/hlo.proto` and `xla/xla_data.proto` hloscope reads, declared
at runtime with protobuf's descriptor_pb2 (no generated `_pb2` modules, no TensorFlow).

Field numbers and types are XLA's, checked against the descriptors embedded in jaxlib 0.10.2
(`tests/parsers/test_xla_memory_proto.py` compares every field declared here with them when
jaxlib is installed). Fields not declared are skipped by the parser, so newer XLA protos still read.
Notable numbers: HloProto.buffer_assignment = 3 (2 is reserved); BufferAllocationProto's
is_parameter_aliased_with_output = 13 and Assigned.element_type = 4, and BufferAssignmentProto's
peak_buffers = 5 are newer than the hlo.proto of most public XLA copies; LogicalBufferProto's
Location names its instruction by `instruction_id` (field 4; `instruction_name` = 2 is deprecated
and empty in current dumps), so names come from the HloModuleProto (or from the text dump of the
same compile, whose value ids are the same).

The messages live in a private DescriptorPool, so they never clash with another copy of XLA's
protos loaded in the same process. `message_class("xla.HloProto")` returns a class.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from google.protobuf import descriptor_pb2

from hloscope.parsers.proto_declare import (
    BOOL,
    BYTES,
    ENUM,
    INT32,
    INT64,
    MANY,
    MESSAGE,
    ONE,
    STRING,
    Field,
    declare_file,
    message_classes,
)

FILE_NAME = "hloscope/xla_memory_subset.proto"
PACKAGE = "xla"

PRIMITIVE_TYPES = (  # xla_data.proto PrimitiveType
    ("PRIMITIVE_TYPE_INVALID", 0), ("PRED", 1), ("S1", 30), ("S2", 26), ("S4", 21), ("S8", 2),
    ("S16", 3), ("S32", 4), ("S64", 5), ("U1", 31), ("U2", 27), ("U4", 22), ("U8", 6),
    ("U16", 7), ("U32", 8), ("U64", 9), ("F16", 10), ("F32", 11), ("BF16", 16), ("F64", 12),
    ("F8E5M2", 19), ("F8E4M3", 28), ("F8E4M3FN", 20), ("F8E4M3B11FNUZ", 23), ("F8E3M4", 29),
    ("F8E5M2FNUZ", 24), ("F8E4M3FNUZ", 25), ("F4E2M1FN", 32), ("F8E8M0FNU", 33),
    ("F6E3M2FN", 35), ("F6E2M3FN", 36), ("C64", 15), ("C128", 18), ("TUPLE", 13),
    ("OPAQUE_TYPE", 14), ("TOKEN", 17), ("BUFFER", 34),
)
ALIAS_KINDS = (("UNDEFINED_ALIAS", 0), ("MAY_ALIAS", 1), ("MUST_ALIAS", 2))  # hlo.proto Kind
EVENT_KINDS = (("ALLOC", 0), ("FREE", 1), ("SHARE_WITH", 2))  # HeapSimulatorTrace.Event.Kind

# message name -> fields; nested messages are "Outer.Inner".
MESSAGES: dict[str, tuple[Field, ...]] = {
    "TileProto": (("dimensions", 1, INT64, MANY, ""),),
    "LayoutProto": (
        ("minor_to_major", 1, INT64, MANY, ""), ("tiles", 6, MESSAGE, MANY, "TileProto"),
        ("element_size_in_bits", 7, INT64, ONE, ""), ("memory_space", 8, INT64, ONE, ""),
        ("tail_padding_alignment_in_elements", 16, INT64, ONE, ""),
    ),
    "ShapeProto": (
        ("element_type", 2, ENUM, ONE, "PrimitiveType"), ("dimensions", 3, INT64, MANY, ""),
        ("tuple_shapes", 4, MESSAGE, MANY, "ShapeProto"),
        ("layout", 5, MESSAGE, ONE, "LayoutProto"),
        ("is_dynamic_dimension", 6, BOOL, MANY, ""),
    ),
    "OpMetadata": (
        ("op_type", 1, STRING, ONE, ""), ("op_name", 2, STRING, ONE, ""),
        ("source_file", 3, STRING, ONE, ""), ("source_line", 4, INT32, ONE, ""),
        ("stack_frame_id", 15, INT32, ONE, ""),
    ),
    "HloInstructionProto": (
        ("name", 1, STRING, ONE, ""), ("opcode", 2, STRING, ONE, ""),
        ("shape", 3, MESSAGE, ONE, "ShapeProto"), ("metadata", 7, MESSAGE, ONE, "OpMetadata"),
        ("parameter_number", 9, INT64, ONE, ""), ("fusion_kind", 11, STRING, ONE, ""),
        ("tuple_index", 13, INT64, ONE, ""), ("custom_call_target", 28, STRING, ONE, ""),
        ("id", 35, INT64, ONE, ""), ("operand_ids", 36, INT64, MANY, ""),
        ("control_predecessor_ids", 37, INT64, MANY, ""),
        ("called_computation_ids", 38, INT64, MANY, ""),
        # read by hloscope.parsers.trace.hlo_text (an HloModuleProto printed as HLO text)
        ("dimensions", 14, INT64, MANY, ""), ("window", 15, MESSAGE, ONE, "Window"),
        ("slice_dimensions", 17, MESSAGE, MANY, "HloInstructionProto.SliceDimensions"),
        ("dynamic_slice_sizes", 20, INT64, MANY, ""),
        ("dot_dimension_numbers", 30, MESSAGE, ONE, "DotDimensionNumbers"),
        ("gather_dimension_numbers", 33, MESSAGE, ONE, "GatherDimensionNumbers"),
        ("gather_slice_sizes", 34, INT64, MANY, ""),
        ("scatter_dimension_numbers", 48, MESSAGE, ONE, "ScatterDimensionNumbers"),
        ("backend_config", 43, BYTES, ONE, ""), ("comparison_direction", 63, STRING, ONE, ""),
        ("channel_id", 26, INT64, ONE, ""),
        ("replica_groups", 49, MESSAGE, MANY, "ReplicaGroup"),
        ("use_global_device_ids", 71, BOOL, ONE, ""),
        ("collective_device_list", 87, MESSAGE, ONE, "CollectiveDeviceListProto"),
        ("iota_collective_device_list", 92, MESSAGE, ONE, "IotaReplicaGroupListProto"),
    ),
    "ReplicaGroup": (("replica_ids", 1, INT64, MANY, ""),),
    "CollectiveDeviceListProto": (("replica_groups", 1, MESSAGE, MANY, "ReplicaGroup"),),
    "IotaReplicaGroupListProto": (
        ("num_replica_groups", 1, INT64, ONE, ""), ("num_devices_per_group", 2, INT64, ONE, ""),
        ("iota_reshape_dims", 3, INT64, MANY, ""), ("iota_transpose_perm", 4, INT32, MANY, ""),
    ),
    "HloInstructionProto.SliceDimensions": (
        ("start", 1, INT64, ONE, ""), ("limit", 2, INT64, ONE, ""),
        ("stride", 3, INT64, ONE, ""),
    ),
    "Window": (("dimensions", 1, MESSAGE, MANY, "WindowDimension"),),
    "WindowDimension": (
        ("size", 1, INT64, ONE, ""), ("stride", 2, INT64, ONE, ""),
        ("padding_low", 3, INT64, ONE, ""), ("padding_high", 4, INT64, ONE, ""),
        ("window_dilation", 5, INT64, ONE, ""), ("base_dilation", 6, INT64, ONE, ""),
        ("window_reversal", 7, BOOL, ONE, ""),
    ),
    "DotDimensionNumbers": (
        ("lhs_contracting_dimensions", 1, INT64, MANY, ""),
        ("rhs_contracting_dimensions", 2, INT64, MANY, ""),
        ("lhs_batch_dimensions", 3, INT64, MANY, ""),
        ("rhs_batch_dimensions", 4, INT64, MANY, ""),
    ),
    "GatherDimensionNumbers": (
        ("offset_dims", 1, INT64, MANY, ""), ("collapsed_slice_dims", 2, INT64, MANY, ""),
        ("start_index_map", 3, INT64, MANY, ""), ("index_vector_dim", 4, INT64, ONE, ""),
        ("operand_batching_dims", 5, INT64, MANY, ""),
        ("start_indices_batching_dims", 6, INT64, MANY, ""),
    ),
    "ScatterDimensionNumbers": (
        ("update_window_dims", 1, INT64, MANY, ""), ("inserted_window_dims", 2, INT64, MANY, ""),
        ("scatter_dims_to_operand_dims", 3, INT64, MANY, ""),
        ("index_vector_dim", 4, INT64, ONE, ""), ("input_batching_dims", 5, INT64, MANY, ""),
        ("scatter_indices_batching_dims", 6, INT64, MANY, ""),
    ),
    "HloComputationProto": (
        ("name", 1, STRING, ONE, ""),
        ("instructions", 2, MESSAGE, MANY, "HloInstructionProto"),
        ("id", 5, INT64, ONE, ""), ("root_id", 6, INT64, ONE, ""),
        ("is_fusion_computation", 7, BOOL, ONE, ""), ("execution_thread", 8, STRING, ONE, ""),
    ),
    "HloScheduleProto": (
        ("sequences", 1, MESSAGE, MANY, "HloScheduleProto.SequencesEntry"),),
    "HloScheduleProto.InstructionSequence": (("instruction_ids", 1, INT64, MANY, ""),),
    "HloScheduleProto.SequencesEntry": (
        ("key", 1, INT64, ONE, ""),
        ("value", 2, MESSAGE, ONE, "HloScheduleProto.InstructionSequence"),
    ),
    "HloInputOutputAliasProto": (
        ("entries", 1, MESSAGE, MANY, "HloInputOutputAliasProto.AliasEntryProto"),),
    "HloInputOutputAliasProto.AliasEntryProto": (
        ("output_shape_index", 1, INT64, MANY, ""), ("parameter_number", 2, INT64, ONE, ""),
        ("parameter_shape_index", 3, INT64, MANY, ""), ("kind", 4, ENUM, ONE, "Kind"),
    ),
    "StackFrameIndexProto": (
        ("file_names", 1, STRING, MANY, ""), ("function_names", 2, STRING, MANY, ""),
        ("file_locations", 3, MESSAGE, MANY, "StackFrameIndexProto.FileLocation"),
        ("stack_frames", 4, MESSAGE, MANY, "StackFrameIndexProto.StackFrame"),
    ),
    "StackFrameIndexProto.FileLocation": (
        ("file_name_id", 1, INT32, ONE, ""), ("function_name_id", 2, INT32, ONE, ""),
        ("line", 3, INT32, ONE, ""), ("column", 4, INT32, ONE, ""),
    ),
    "StackFrameIndexProto.StackFrame": (
        ("file_location_id", 1, INT32, ONE, ""), ("parent_frame_id", 2, INT32, ONE, ""),
    ),
    "HloModuleProto": (
        ("name", 1, STRING, ONE, ""), ("entry_computation_name", 2, STRING, ONE, ""),
        ("computations", 3, MESSAGE, MANY, "HloComputationProto"), ("id", 5, INT64, ONE, ""),
        ("entry_computation_id", 6, INT64, ONE, ""),
        ("schedule", 7, MESSAGE, ONE, "HloScheduleProto"),
        ("input_output_alias", 8, MESSAGE, ONE, "HloInputOutputAliasProto"),
        ("stack_frame_index", 17, MESSAGE, ONE, "StackFrameIndexProto"),
    ),
    "LogicalBufferProto": (
        ("id", 1, INT64, ONE, ""), ("size", 2, INT64, ONE, ""),
        ("defined_at", 3, MESSAGE, ONE, "LogicalBufferProto.Location"),
        ("color", 4, INT64, ONE, ""),
    ),
    "LogicalBufferProto.Location": (
        ("instruction_name", 2, STRING, ONE, ""), ("shape_index", 3, INT64, MANY, ""),
        ("instruction_id", 4, INT64, ONE, ""),
    ),
    "BufferAllocationProto": (
        ("index", 1, INT64, ONE, ""), ("size", 2, INT64, ONE, ""),
        ("is_thread_local", 3, BOOL, ONE, ""), ("is_entry_computation_parameter", 5, BOOL, ONE, ""),
        ("parameter_number", 6, INT64, ONE, ""), ("maybe_live_out", 7, BOOL, ONE, ""),
        ("color", 8, INT64, ONE, ""),
        ("assigned", 9, MESSAGE, MANY, "BufferAllocationProto.Assigned"),
        ("parameter_shape_index", 10, INT64, MANY, ""), ("is_tuple", 11, BOOL, ONE, ""),
        ("is_constant", 12, BOOL, ONE, ""),
        ("is_parameter_aliased_with_output", 13, BOOL, ONE, ""),
    ),
    "BufferAllocationProto.Assigned": (
        ("logical_buffer_id", 1, INT64, ONE, ""), ("offset", 2, INT64, ONE, ""),
        ("size", 3, INT64, ONE, ""), ("element_type", 4, ENUM, ONE, "PrimitiveType"),
    ),
    "HeapSimulatorTrace": (
        ("events", 1, MESSAGE, MANY, "HeapSimulatorTrace.Event"),
        ("whole_module_simulation", 2, BOOL, ONE, ""),
        ("buffer_allocation_index", 3, INT64, ONE, ""),
    ),
    "HeapSimulatorTrace.Event": (
        ("kind", 1, ENUM, ONE, "HeapSimulatorTrace.Event.Kind"),
        ("buffer_id", 2, INT64, ONE, ""), ("computation_name", 3, STRING, ONE, ""),
        ("instruction_name", 4, STRING, ONE, ""),
        ("share_with_canonical_id", 5, INT64, ONE, ""),
    ),
    "BufferAssignmentProto": (
        ("logical_buffers", 1, MESSAGE, MANY, "LogicalBufferProto"),
        ("buffer_aliases", 2, MESSAGE, MANY, "BufferAssignmentProto.BufferAlias"),
        ("buffer_allocations", 3, MESSAGE, MANY, "BufferAllocationProto"),
        ("heap_simulator_traces", 4, MESSAGE, MANY, "HeapSimulatorTrace"),
        ("peak_buffers", 5, MESSAGE, MANY, "BufferAssignmentProto.PeakBuffers"),
    ),
    "BufferAssignmentProto.BufferAlias": (
        ("source_buffer_id", 1, INT64, ONE, ""),
        ("location", 2, MESSAGE, ONE, "LogicalBufferProto.Location"),
    ),
    "BufferAssignmentProto.PeakBuffers": (
        ("index", 1, INT64, ONE, ""), ("logical_buffer_ids", 2, INT64, MANY, ""),
    ),
    "HloProto": (
        ("hlo_module", 1, MESSAGE, ONE, "HloModuleProto"),
        ("buffer_assignment", 3, MESSAGE, ONE, "BufferAssignmentProto"),
    ),
}
# Fields an older XLA wrote that jaxlib 0.10.2's descriptors no longer have (so the schema test,
# which reads MESSAGES, does not compare them): libtpu of early 2025 puts a collective's iota
# replica groups in CollectiveDeviceListProto field 2; newer XLA in the instruction's field 92.
OLDER_XLA_FIELDS: dict[str, tuple[Field, ...]] = {
    "CollectiveDeviceListProto": (
        ("iota_replica_group_list", 2, MESSAGE, ONE, "IotaReplicaGroupListProto"),),
}
ENUMS: dict[str, tuple[tuple[str, int], ...]] = {
    "PrimitiveType": PRIMITIVE_TYPES, "Kind": ALIAS_KINDS,
    "HeapSimulatorTrace.Event.Kind": EVENT_KINDS,
}


def message_class(full_name: str) -> Any:
    """The message class of `xla.<Name>` (nested: `xla.Outer.Inner`)."""
    return _classes()(full_name)


@cache
def _classes() -> Callable[[str], Any]:
    return message_classes(file_descriptor())


def file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """The FileDescriptorProto declaring MESSAGES (with OLDER_XLA_FIELDS) and ENUMS in package
    `xla` (proto3)."""
    declared = {name: fields + OLDER_XLA_FIELDS.get(name, ()) for name, fields in MESSAGES.items()}
    return declare_file(FILE_NAME, PACKAGE, declared, ENUMS)
