"""A variant's checkpoint names beside the buffers live at its peak (no jax).

The names and their decisions come from the compile's trace (`formats.checkpoint_names`); XLA's
program does not carry them (`checkpoint_name` lowers to nothing), so a saved name is found
among `memory`'s live set at the peak in two ways, said per match:

- `source line`: a buffer whose metadata line is the `checkpoint_name` call's or that of the
  operation that made the value (outside a layer scan, XLA keeps the producer's line), unless
  that line is inside an installed package: a library function's line (flax's Linear) is the
  line of every call to it, so it would match other values' buffers;
- `per-layer shape`: a buffer a layer scan stacked ([L, ...], split into L layer rows) whose
  one-layer share has the name's shape and element type; a scan's stacked residuals carry the
  scan's line, not the block's. Two names of one shape both match such a buffer; the match says
  which buffer could hold the name, not that XLA kept it (it may fuse or convert it: bf16 names
  saved as f32, a saved matmul output replaced by what it feeds).

Only names the variant keeps (saved, offloaded, or not checkpointed: the backward keeps what it
reads) are matched; a recomputed name holds no buffer across the step.

The trace knows global shapes; the program (and its live set) is one device's. Each row has both:
`shape` / `bytes` as traced, `device_shape` / `device_bytes` for one device where they are known
(the caller's `device_shapes`: the built-in block's closed form under its mesh, or the traced
shape itself on one device; None for a user step on several devices, whose sharding of an
intermediate only the compile decides). Stacked buffers are matched by the per-device shape.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import PurePath

from hloscope.analyses.memory.analysis import BufferRow
from hloscope.formats.checkpoint_names import CheckpointName

KEPT = ("saved", "offloaded", "not checkpointed")
_HLO_TYPES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "float64": "f64",
              "int32": "s32", "int8": "s8", "int64": "s64", "uint8": "u8", "uint32": "u32",
              "bool": "pred", "float8_e4m3fn": "f8e4m3fn", "float8_e5m2": "f8e5m2"}
_ARRAY = re.compile(r"^([a-z0-9]+)\[([0-9,]*)\]")
_INSTALLED = frozenset({"site-packages", "dist-packages"})


@dataclass(frozen=True)
class PeakBuffer:
    """A live buffer at the peak that may hold a name."""

    buffer: str
    bytes: int
    layers: int  # the layer rows it is split into (0: not stacked)
    matched_by: str  # "source line" or "per-layer shape"


@dataclass(frozen=True)
class NameRow:
    """One checkpoint name of a variant, and the buffers at the peak that may hold it."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    bytes: int
    source: str
    decision: str | None
    decided_by: str
    at_peak: tuple[PeakBuffer, ...] | None  # None: not matched (recomputed, or no live set)
    device_shape: tuple[int, ...] | None = None  # one device's share; None: not known
    device_bytes: int | None = None

    def to_dict(self) -> dict:
        data = asdict(self)
        data["shape"] = list(self.shape)
        data["device_shape"] = None if self.device_shape is None else list(self.device_shape)
        data["at_peak"] = None if self.at_peak is None else [asdict(b) for b in self.at_peak]
        return data


DeviceShapes = Callable[[CheckpointName], "tuple[int, ...] | None"]


def name_rows(names: Sequence[CheckpointName], live_at_peak: Sequence[BufferRow] | None,
              device_shapes: DeviceShapes | None = None) -> tuple[NameRow, ...]:
    """The names, each kept one with the live buffers that may hold it (`live_at_peak`: memory's
    live set, None when the program could not be analysed); `device_shapes` gives a name's
    per-device shape (None: not known)."""
    rows = []
    for n in names:
        local = None if device_shapes is None else device_shapes(n)
        rows.append(NameRow(n.name, n.shape, n.dtype, n.bytes, n.source, n.decision,
                            n.decided_by, _matches(n, local, live_at_peak), local,
                            None if local is None else _bytes_of(n, local)))
    return tuple(rows)


def _bytes_of(name: CheckpointName, shape: tuple[int, ...]) -> int:
    elements = math.prod(name.shape)
    return name.bytes * math.prod(shape) // elements if elements else name.bytes


def _matches(name: CheckpointName, local: tuple[int, ...] | None,
             live: Sequence[BufferRow] | None) -> tuple[PeakBuffer, ...] | None:
    if live is None or name.decision not in KEPT:
        return None
    lines = {line for line in (name.source, _specific(name.made_at)) if line}
    found = []
    for row in live:
        if row.category in ("parameter", "input"):
            continue
        if row.source in lines:
            found.append(PeakBuffer(row.name, row.bytes, len(row.layers), "source line"))
        elif row.layers and _layer_share(row) == (_HLO_TYPES.get(name.dtype),
                                                  local or name.shape):
            found.append(PeakBuffer(row.name, row.bytes, len(row.layers), "per-layer shape"))
    return tuple(found)


def _specific(made_at: str) -> str:
    """The producer's `FILE:LINE`, or "" when it is in an installed package (jax takes such a
    frame only where site-packages lies outside the interpreter's folder: a virtual
    environment; a base interpreter's gives the user's line)."""
    return "" if not _INSTALLED.isdisjoint(PurePath(made_at.rpartition(":")[0]).parts) else made_at


def _layer_share(row: BufferRow) -> tuple[str, tuple[int, ...]] | None:
    """(element type, shape) of one layer's share of a stacked buffer `f32[4,4,32,256]{...}`."""
    match = _ARRAY.match(row.shape)
    if match is None or not match.group(2):
        return None
    dims = tuple(int(d) for d in match.group(2).split(","))
    return (match.group(1), dims[1:]) if dims[0] == len(row.layers) else None
