"""The XSpace schema (tsl/profiler/protobuf/xplane.proto), declared from its field numbers.

No installed package ships `xplane_pb2`, and hloscope does not depend on TensorFlow: the few
messages a profile holds are declared here with protobuf's descriptor_pb2 (see
`hloscope.parsers.proto_declare`). Field numbers and types are xplane.proto's; the test suite
compares them with the descriptor jaxlib embeds. XStat's value and XEvent's offset are oneofs,
declared as such so `WhichOneof` tells which one a stat carries.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from hloscope.parsers.proto_declare import (
    BYTES,
    DOUBLE,
    INT64,
    MANY,
    MESSAGE,
    ONE,
    STRING,
    UINT64,
    Field,
    declare_file,
    message_classes,
)

FILE_NAME = "hloscope/xplane_subset.proto"
PACKAGE = "tensorflow.profiler"

MESSAGES: dict[str, tuple[Field, ...]] = {
    "XSpace": (
        ("planes", 1, MESSAGE, MANY, "XPlane"), ("errors", 2, STRING, MANY, ""),
        ("warnings", 3, STRING, MANY, ""), ("hostnames", 4, STRING, MANY, ""),
    ),
    "XPlane": (
        ("id", 1, INT64, ONE, ""), ("name", 2, STRING, ONE, ""),
        ("lines", 3, MESSAGE, MANY, "XLine"),
        ("event_metadata", 4, MESSAGE, MANY, "XPlane.EventMetadataEntry"),
        ("stat_metadata", 5, MESSAGE, MANY, "XPlane.StatMetadataEntry"),
        ("stats", 6, MESSAGE, MANY, "XStat"),
    ),
    "XPlane.EventMetadataEntry": (
        ("key", 1, INT64, ONE, ""), ("value", 2, MESSAGE, ONE, "XEventMetadata"),
    ),
    "XPlane.StatMetadataEntry": (
        ("key", 1, INT64, ONE, ""), ("value", 2, MESSAGE, ONE, "XStatMetadata"),
    ),
    "XLine": (
        ("id", 1, INT64, ONE, ""), ("display_id", 10, INT64, ONE, ""),
        ("name", 2, STRING, ONE, ""), ("display_name", 11, STRING, ONE, ""),
        ("timestamp_ns", 3, INT64, ONE, ""), ("duration_ps", 9, INT64, ONE, ""),
        ("events", 4, MESSAGE, MANY, "XEvent"),
    ),
    "XEvent": (
        ("metadata_id", 1, INT64, ONE, ""), ("offset_ps", 2, INT64, ONE, ""),
        ("num_occurrences", 5, INT64, ONE, ""), ("duration_ps", 3, INT64, ONE, ""),
        ("stats", 4, MESSAGE, MANY, "XStat"),
    ),
    "XStat": (
        ("metadata_id", 1, INT64, ONE, ""), ("double_value", 2, DOUBLE, ONE, ""),
        ("uint64_value", 3, UINT64, ONE, ""), ("int64_value", 4, INT64, ONE, ""),
        ("str_value", 5, STRING, ONE, ""), ("bytes_value", 6, BYTES, ONE, ""),
        ("ref_value", 7, UINT64, ONE, ""),
    ),
    "XEventMetadata": (
        ("id", 1, INT64, ONE, ""), ("name", 2, STRING, ONE, ""),
        ("display_name", 4, STRING, ONE, ""), ("metadata", 3, BYTES, ONE, ""),
        ("stats", 5, MESSAGE, MANY, "XStat"), ("child_id", 6, INT64, MANY, ""),
    ),
    "XStatMetadata": (
        ("id", 1, INT64, ONE, ""), ("name", 2, STRING, ONE, ""),
        ("description", 3, STRING, ONE, ""),
    ),
}
ONEOFS: dict[str, dict[str, tuple[str, ...]]] = {
    "XEvent": {"data": ("offset_ps", "num_occurrences")},
    "XStat": {"value": ("double_value", "uint64_value", "int64_value", "str_value",
                        "bytes_value", "ref_value")},
}


def message_class(full_name: str) -> Any:
    """The class of `tensorflow.profiler.<Name>`."""
    return _classes()(full_name)


@cache
def _classes() -> Callable[[str], Any]:
    return message_classes(declare_file(FILE_NAME, PACKAGE, MESSAGES, oneofs=ONEOFS))


def xspace_class() -> Any:
    return message_class(f"{PACKAGE}.XSpace")
