"""Replica groups and source-target pairs of collectives, as XLA prints them.

Two spellings of `replica_groups=` (XLA's CollectiveDeviceList::ToString):

- explicit: `{{0,1},{2,3}}`, or `{}` for "every participant in one group";
- iota (IotaReplicaGroupList): `[G,S]<=[d0,d1,...]T(p0,p1,...)`, G groups of S ids. XLA builds
  them as an IotaTileAssignment: iota(d0*d1*...) reshaped to the reshape dims, transposed by the
  permutation (`T(...)`, identity when absent), flattened, and cut into G rows of S. For example
  `[2,4]<=[4,2]T(1,0)` is {{0,2,4,6},{1,3,5,7}}.

- mesh axes (MeshAxesReplicaGroupList, seen in libtpu 0.0.42.1's TPU output):
  `mesh['axis_0'=4,'axis_1'=1,'axis_2'=1] {'axis_0','axis_1'}`: the ids are iota over the mesh
  (row-major, the first axis major) and each group holds the ids that differ only along the
  listed axes (in the listed order); a sub-axis `'x':(m)k` is the middle factor of x's size
  split as (m, k, rest), as Shardy defines sub-axes.

`source_target_pairs={{0,1},{1,2}}` (collective-permute) is a list of pairs.

The ids are replica ids, partition ids or flattened ids depending on the op's mode
(`hloscope.analyses.cost.collectives` maps them to devices). Pure Python, no numpy.
"""
from __future__ import annotations

import itertools
import math
import re

from hloscope.model.shape_text import TextSyntaxError

Groups = tuple[tuple[int, ...], ...]
_IOTA = re.compile(r"^\[([\d,\s]+)\]\s*<=\s*\[([\d,\s]+)\]\s*(?:T\(([\d,\s]+)\))?$")
_MESH = re.compile(r"^mesh\[([^\]]*)\]\s*\{([^}]*)\}$")
_MESH_AXIS = re.compile(r"^'?([\w.\-]+)'?\s*=\s*(\d+)$")
_GROUP_AXIS = re.compile(r"^'?([\w.\-]+)'?(?::\((\d+)\)(\d+))?$")


def parse_replica_groups(text: str) -> Groups:
    """The groups of a `replica_groups` value (explicit or iota); () for `{}` (all in one)."""
    body = text.strip()
    if body.startswith("["):
        return _iota_groups(body)
    if body.startswith("mesh["):
        return _mesh_groups(body)
    return parse_nested_ints(body)


def _mesh_groups(text: str) -> Groups:
    match = _MESH.match(text)
    if match is None:
        raise TextSyntaxError(f"not a mesh-axes replica group list: '{text}'", 0)
    sizes: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in match.group(1).split(","))):
        axis = _MESH_AXIS.match(item)
        if axis is None:
            raise TextSyntaxError(f"bad mesh axis '{item}' in '{text}'", 0)
        sizes[axis.group(1)] = int(axis.group(2))
    dims, names = _split_sub_axes(sizes, match.group(2), text)
    grouped = [names.index(name) for name in _listed(match.group(2))]
    others = [i for i in range(len(dims)) if i not in grouped]
    flat = iota_transposed(tuple(dims), tuple(others + grouped))
    size = math.prod(dims[i] for i in grouped)
    return tuple(tuple(flat[i : i + size]) for i in range(0, len(flat), size))


def _listed(axes: str) -> list[str]:
    """The grouped axes, a sub-axis named `x:(m)k`."""
    names = []
    for item in filter(None, (part.strip() for part in axes.split(","))):
        match = _GROUP_AXIS.match(item)
        if match is None:
            raise TextSyntaxError(f"bad axis '{item}'", 0)
        name, pre, size = match.groups()
        names.append(name if pre is None else f"{name}:({pre}){size}")
    return names


def _split_sub_axes(sizes: dict[str, int], axes: str,
                    text: str) -> tuple[list[int], list[str]]:
    """The mesh's dimensions, with each axis a listed sub-axis refers to split (pre, size,
    rest) and the middle factor named after the sub-axis."""
    subs = {name.split(":", 1)[0]: name for name in _listed(axes) if ":" in name}
    dims: list[int] = []
    names: list[str] = []
    for name, size in sizes.items():
        if name not in subs:
            dims.append(size)
            names.append(name)
            continue
        pre, sub = (int(v) for v in re.findall(r"\d+", subs[name].split(":", 1)[1]))
        if size % (pre * sub):
            raise TextSyntaxError(f"sub-axis {subs[name]} does not divide {size} in '{text}'", 0)
        dims += [pre, sub, size // (pre * sub)]
        names += [f"{name}#pre", subs[name], f"{name}#rest"]
    missing = [n for n in _listed(axes) if n not in names]
    if missing:
        raise TextSyntaxError(f"axis {missing[0]} is not in the mesh of '{text}'", 0)
    return dims, names


def _iota_groups(text: str) -> Groups:
    match = _IOTA.match(text)
    if match is None:
        raise TextSyntaxError(f"not an iota replica group list: '{text}'", 0)
    group_dims = _ints(match.group(1))
    reshape_dims = _ints(match.group(2))
    permutation = _ints(match.group(3)) if match.group(3) else tuple(range(len(reshape_dims)))
    if len(group_dims) != 2:
        raise TextSyntaxError(f"iota replica groups need [groups,size], got '{text}'", 0)
    if sorted(permutation) != list(range(len(reshape_dims))):
        raise TextSyntaxError(f"bad transpose {permutation} for dims {reshape_dims}", 0)
    if math.prod(group_dims) != math.prod(reshape_dims):
        raise TextSyntaxError(f"{group_dims} and {reshape_dims} hold different counts", 0)
    flat = iota_transposed(reshape_dims, permutation)
    size = group_dims[1]
    return tuple(tuple(flat[i : i + size]) for i in range(0, len(flat), size))


def iota_transposed(dims: tuple[int, ...], permutation: tuple[int, ...]) -> list[int]:
    """iota(prod(dims)) reshaped to `dims`, transposed by `permutation`, flattened (row-major),
    as numpy's `arange(n).reshape(dims).transpose(permutation).ravel()`."""
    strides = [math.prod(dims[k + 1 :]) for k in range(len(dims))]
    moved = [dims[axis] for axis in permutation]
    moved_strides = [strides[axis] for axis in permutation]
    return [sum(i * s for i, s in zip(index, moved_strides, strict=True))
            for index in itertools.product(*(range(d) for d in moved))]


def parse_nested_ints(text: str) -> Groups:
    """`{{0,1},{2,3}}` -> ((0, 1), (2, 3)); `{}` -> ()."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise TextSyntaxError(f"expected '{{...}}', got '{text}'", 0)
    inner = body[1:-1].strip()
    if not inner:
        return ()
    groups = re.findall(r"\{([^{}]*)\}", inner)
    if re.sub(r"\{[^{}]*\}", "", inner).replace(",", "").strip():
        raise TextSyntaxError(f"expected a list of '{{ids}}' groups, got '{text}'", 0)
    return tuple(_ints(group) if group.strip() else () for group in groups)


def _ints(text: str) -> tuple[int, ...]:
    items = [item.strip() for item in text.split(",")]
    if not all(item.isdigit() for item in items):
        raise TextSyntaxError(f"expected integers, got '{text}'", 0)
    return tuple(int(item) for item in items)
