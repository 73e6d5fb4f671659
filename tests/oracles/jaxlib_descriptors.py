"""The protobuf descriptors jaxlib embeds (in libjax_common.so): the truth the project's own
runtime-declared schemas (XLA's protos, XSpace) are checked against."""
from __future__ import annotations

import mmap
from pathlib import Path

import pytest


def jaxlib_descriptors(files: tuple[str, ...]) -> dict[str, object]:
    """Message and enum descriptors (by dotted name) of the protos `files` jaxlib embeds
    (skips when jaxlib is absent)."""
    from google.protobuf import descriptor_pb2

    jaxlib = pytest.importorskip("jaxlib")
    library = Path(jaxlib.__file__).parent / "libjax_common.so"
    if not library.exists():
        pytest.skip(f"{library} is absent: no embedded descriptors to compare with")
    found: dict[str, object] = {}
    with library.open("rb") as handle, mmap.mmap(handle.fileno(), 0,
                                                 access=mmap.ACCESS_READ) as data:
        for name in files:
            file = descriptor_pb2.FileDescriptorProto()
            file.ParseFromString(_embedded_file(data, name))
            _index(found, "", file.message_type, file.enum_type)
    return found


def _embedded_file(data: mmap.mmap, name: str) -> bytes:
    start = data.find(b"\x0a" + bytes([len(name)]) + name.encode())
    assert start >= 0, f"{name} is not embedded in jaxlib"
    position = start
    while True:  # walk wire-format fields until one cannot be a FileDescriptorProto field
        key, after = varint(data, position)
        number, kind = key >> 3, key & 7
        if not 1 <= number <= 20 or kind not in (0, 2):
            return bytes(data[start:position])
        length, after = varint(data, after)
        position = after + (length if kind == 2 else 0)


def varint(data: bytes | mmap.mmap, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, position


def _index(found: dict[str, object], prefix: str, messages, enums) -> None:
    for enum in enums:
        found[prefix + enum.name] = enum
    for message in messages:
        found[prefix + message.name] = message
        _index(found, f"{prefix}{message.name}.", message.nested_type, message.enum_type)
