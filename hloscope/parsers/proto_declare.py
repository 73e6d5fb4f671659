"""Protobuf schemas declared at runtime from field numbers (no generated `_pb2` modules).

A schema is a dict of messages, each a tuple of fields `(name, number, type, label, type name)`
(nested messages are named "Outer.Inner"; a name ending in "Entry" is a map entry), a dict of
enums, and optionally the oneofs of a message (`{"XStat": {"value": ("double_value", ...)}}`).
`declare_file` turns it into a FileDescriptorProto; `message_classes` adds it to a private
DescriptorPool (never clashing with another copy of the same protos loaded in the process) and
returns a lookup of message classes by full name. Unknown fields on the wire are skipped by
protobuf, so a schema declaring a subset still reads newer messages.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
INT64, INT32, UINT64, BOOL = _F.TYPE_INT64, _F.TYPE_INT32, _F.TYPE_UINT64, _F.TYPE_BOOL
DOUBLE, STRING, BYTES = _F.TYPE_DOUBLE, _F.TYPE_STRING, _F.TYPE_BYTES
MESSAGE, ENUM = _F.TYPE_MESSAGE, _F.TYPE_ENUM
ONE, MANY = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED

# (name, number, type, label, type name for messages and enums)
Field = tuple[str, int, int, int, str]
Messages = Mapping[str, tuple[Field, ...]]
Enums = Mapping[str, tuple[tuple[str, int], ...]]
Oneofs = Mapping[str, Mapping[str, tuple[str, ...]]]


def declare_file(file_name: str, package: str, messages: Messages, enums: Enums | None = None,
                 oneofs: Oneofs | None = None) -> descriptor_pb2.FileDescriptorProto:
    """The proto3 FileDescriptorProto declaring `messages` and `enums` in `package`."""
    file = descriptor_pb2.FileDescriptorProto(name=file_name, package=package, syntax="proto3")
    declared: dict[str, Any] = {}
    for name in sorted(messages, key=lambda n: n.count(".")):
        outer, _, inner = name.rpartition(".")
        parent = declared[outer].nested_type if outer else file.message_type
        message = parent.add(name=inner)
        declared[name] = message
        if name.endswith("Entry"):
            message.options.map_entry = True
        for field in messages[name]:
            _add_field(message, field, package)
        _add_oneofs(message, (oneofs or {}).get(name, {}))
    for name, values in (enums or {}).items():
        outer, _, inner = name.rpartition(".")
        parent = declared[outer].enum_type if outer else file.enum_type
        parent.add(name=inner, value=[descriptor_pb2.EnumValueDescriptorProto(name=v, number=n)
                                      for v, n in values])
    return file


def message_classes(file: descriptor_pb2.FileDescriptorProto) -> Callable[[str], Any]:
    """A function from a full message name (`package.Outer.Inner`) to its class."""
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)

    def message_class(full_name: str) -> Any:
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(full_name))

    return message_class


def _add_field(message: descriptor_pb2.DescriptorProto, field: Field, package: str) -> None:
    name, number, kind, label, type_name = field
    declared = message.field.add(name=name, number=number, type=kind, label=label)
    if type_name:
        declared.type_name = f".{package}.{type_name}"


def _add_oneofs(message: descriptor_pb2.DescriptorProto,
                oneofs: Mapping[str, tuple[str, ...]]) -> None:
    for index, (oneof, members) in enumerate(oneofs.items()):
        message.oneof_decl.add(name=oneof)
        for field in message.field:
            if field.name in members:
                field.oneof_index = index
