"""The largest things live at the peak, grouped so that they read like a diagnosis.

Buffers of the same category, per-layer shape and element type are one group, counted per layer:
unrolled layers carry their layer in the op_name (`layer_3`), scanned layers stack theirs on a
leading axis whose size is the layer count (`f32[32,8,4,2048,2048]` is 32 layers of
`[8,4,2048,2048]`). Given the model's dimensions, a per-layer shape is also named (MLP hidden
activations, attention scores, ...), so a group reads

    32 layers x saved [8,2048,14336] bf16 MLP hidden activations = 14.0 GiB
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

from hloscope.analyses.memory.analysis import BufferRow
from hloscope.analyses.memory.layers import LOOP_BODY
from hloscope.analyses.oom.categories import oom_category
from hloscope.model.module import HloModule
from hloscope.model.shape_text import parse_shape
from hloscope.units import format_bytes


@dataclass(frozen=True, slots=True)
class ModelDims:
    """Per-device activation dimensions of the model, to name shapes."""

    batch: int
    seq: int
    d_model: int
    d_ff: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int


@dataclass(slots=True)
class BufferGroup:
    category: str
    shape: tuple[int, ...]  # per layer
    dtype: str
    description: str
    layers: int  # 0: not per layer
    bytes: int = 0
    buffers: int = 0
    instructions: list[str] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)  # the pytree paths of its arguments

    @property
    def label(self) -> str:
        dims = "[" + ",".join(map(str, self.shape)) + "]"
        what = f"{_short(self.category)} {dims} {self.dtype} {self.description}".rstrip()
        count = f"{self.layers} layers x " if self.layers > 1 else ""
        return f"{count}{what} = {format_bytes(self.bytes)}{self._named()}"

    def _named(self) -> str:
        if not self.arguments:
            return ""
        more = len(self.arguments) - 1
        return f" ({self.arguments[0]}{f' and {more} more' if more else ''})"

    def to_dict(self) -> dict:
        return {**asdict(self), "shape": list(self.shape), "label": self.label}


def _short(category: str) -> str:
    return {"saved activations": "saved", "temporaries": "temporary"}.get(category, category)


def element_type_and_dims(text: str) -> tuple[str, tuple[int, ...]]:
    shape = parse_shape(text)
    return shape.element_type, shape.dimensions


def stacked_layer_count(module: HloModule) -> int | None:
    """The leading dimension scanned layers stack their parameters on (None when unrolled)."""
    sizes: Counter[int] = Counter()
    for parameter in module.entry.parameters:
        path = (parameter.op_name or parameter.name).lower()
        if "layers" in path and parameter.shape.is_array and parameter.shape.rank >= 2:
            sizes[parameter.shape.dimensions[0]] += 1
    return sizes.most_common(1)[0][0] if sizes else None


def group_buffers(rows: list[BufferRow], backend: str, layers: int | None,
                  dims: ModelDims | None) -> list[BufferGroup]:
    """Groups of the rows, largest first."""
    groups: dict[tuple, BufferGroup] = {}
    layer_sets: dict[tuple, set[str]] = {}
    for row in rows:
        category = oom_category(row, backend)
        dtype, shape = element_type_and_dims(row.shape)
        layer = None if row.layers or row.layer == LOOP_BODY else row.layer
        stacked = bool(layers and layer is None and len(shape) >= 3 and shape[0] == layers
                       and category not in ("weights", "optimizer state", "gradients"))
        per_layer = shape[1:] if stacked else shape
        key = (category, per_layer, dtype, layer is not None or stacked,
               None if layer is not None or stacked else row.instruction)
        group = groups.get(key)
        if group is None:
            group = groups[key] = BufferGroup(category, per_layer, dtype,
                                              describe(per_layer, dims), 0)
        group.bytes += row.bytes
        group.buffers += 1
        group.instructions.append(row.instruction)
        if row.argument:
            group.arguments.append(row.argument)
        seen = layer_sets.setdefault(key, set())
        if stacked:
            seen.update(f"stacked_{i}" for i in range(layers or 0))
        elif layer is not None:
            seen.add(layer)
    for key, group in groups.items():
        group.layers = len(layer_sets[key])
    return sorted(groups.values(), key=lambda g: (-g.bytes, g.label))


def describe(shape: tuple[int, ...], dims: ModelDims | None) -> str:
    """What an activation of this per-layer shape is, from the model's dimensions."""
    if dims is None or len(shape) < 2 or shape[0] != dims.batch:
        return ""
    rest = shape[1:]
    if len(rest) >= 3 and rest[-1] == rest[-2] == dims.seq:
        return "attention scores"
    if rest[0] != dims.seq:
        return ""
    return _token_tensor(rest[1:], dims)


def _token_tensor(inner: tuple[int, ...], dims: ModelDims) -> str:
    if not inner or inner == (1,):
        return "per-token statistics"
    if len(inner) >= 2 and inner[-1] == dims.head_dim:
        return "attention heads (Q/K/V)"
    names = {dims.vocab: "logits", 3 * dims.d_model: "fused QKV projections",
             dims.d_model: "hidden states", dims.d_ff: "MLP hidden activations"}
    return names.get(inner[-1], "") if len(inner) == 1 else ""
