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
  split as (m, k, rest), as Shardy defines sub-axes (several sub-axes of one axis split it in
  pre-size order, with padding and rest pieces: XLA's HandleMultiAxisRefPerDimension). A mesh
  whose device array is not a plain iota carries it (XLA's Mesh::ToString):
  `mesh['axis_0'=4,'axis_1'=1,'axis_2'=4], device_ids=([4,4]T(1,0)) {'axis_0'}` (an iota
  reshaped and transposed, as `[G,S]<=[...]T(...)` below) or `device_ids=(0,2,1,3)` (the ids
  row-major); the groups then hold those devices. The top-level comma makes the loader join
  `device_ids=` to the `replica_groups=mesh[...]` before it (`Instruction`).

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
_MESH = re.compile(r"^mesh\[([^\]]*)\]\s*(?:,\s*device_ids\s*=\s*\(((?:[^()]|\([^()]*\))*)\)\s*)?"
                   r"\{([^}]*)\}$")
_DEVICE_IOTA = re.compile(r"\[([\d,\s]+)\]\s*(?:T\(([\d,\s]+)\))?")
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
    """XLA's MeshAxesReplicaGroupList::flattened_replica_groups: the mesh's device array
    (iota, or `device_ids=`) reshaped to the mesh dimensions with each axis a listed sub-axis
    splits cut in pieces, the grouped pieces transposed last (in the listed order), then cut
    into groups of the grouped pieces' size."""
    match = _MESH.match(text)
    if match is None:
        raise TextSyntaxError(f"not a mesh-axes replica group list: '{text}'", 0)
    sizes: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in match.group(1).split(","))):
        axis = _MESH_AXIS.match(item)
        if axis is None or axis.group(1) in sizes:
            raise TextSyntaxError(f"bad mesh axis '{item}' in '{text}'", 0)
        sizes[axis.group(1)] = int(axis.group(2))
    devices = _mesh_devices(match.group(2), math.prod(sizes.values()), text)
    dims, grouped = _reindexed(sizes, _listed(match.group(3)), text)
    others = [i for i in range(len(dims)) if i not in grouped]
    flat = [devices[i] for i in iota_transposed(tuple(dims), tuple(others + grouped))]
    size = math.prod(dims[i] for i in grouped)
    return tuple(tuple(flat[i : i + size]) for i in range(0, len(flat), size))


def _mesh_devices(spec: str | None, count: int, text: str) -> list[int]:
    """The mesh's device ids in row-major order: iota without `device_ids=`; with it, an iota
    `[d0,d1,...]T(p0,p1,...)` (reshaped, transposed, flattened: XLA's IotaTileAssignment) or
    the ids listed, a permutation of 0..n-1 (XLA's Mesh::ValidateMesh)."""
    if spec is None:
        return list(range(count))
    spec = spec.strip()
    iota = _DEVICE_IOTA.fullmatch(spec)
    if iota is not None:
        reshape = _ints(iota.group(1))
        permutation = _ints(iota.group(2)) if iota.group(2) else tuple(range(len(reshape)))
        if math.prod(reshape) != count or sorted(permutation) != list(range(len(reshape))):
            raise TextSyntaxError(f"device_ids {spec} do not fit the {count} devices of '{text}'",
                                  0)
        return iota_transposed(reshape, permutation)
    devices = list(_ints(spec))
    if sorted(devices) != list(range(count)):
        raise TextSyntaxError(f"device_ids ({spec}) are not a permutation of 0..{count - 1} in "
                              f"'{text}'", 0)
    return devices


def _listed(axes: str) -> list[tuple[str, int, int]]:
    """The grouped axes in the listed order, as (mesh axis, pre-size, size): a whole axis has
    pre-size 0 and size 0; a sub-axis `x:(m)k` pre-size m and size k."""
    found = []
    for item in filter(None, (part.strip() for part in axes.split(","))):
        match = _GROUP_AXIS.match(item)
        if match is None:
            raise TextSyntaxError(f"bad axis '{item}'", 0)
        name, pre, size = match.groups()
        found.append((name, 0, 0) if pre is None else (name, int(pre), int(size)))
    return found


def _reindexed(sizes: dict[str, int], listed: list[tuple[str, int, int]],
               text: str) -> tuple[list[int], list[int]]:
    """XLA's ComputeReindexedAxes: the mesh's dimensions with each axis that listed sub-axes
    refer to split into pieces, and the position of each listed axis among them (in the listed
    order)."""
    unknown = [name for name, _, _ in listed if name not in sizes]
    if unknown:
        raise TextSyntaxError(f"axis {unknown[0]} is not in the mesh of '{text}'", 0)
    dims: list[int] = []
    positions: dict[str, list[int]] = {}
    for name, size in sizes.items():
        refs = [(pre, sub) for axis, pre, sub in listed if axis == name]
        pieces, aggregated = _split_axis(name, size, refs, text)
        positions[name] = [len(dims) + i for i in aggregated]
        dims += pieces
    taken: dict[str, int] = {}
    grouped = []
    for name, _, _ in listed:
        grouped.append(positions[name][taken.get(name, 0)])
        taken[name] = taken.get(name, 0) + 1
    return dims, grouped


def _split_axis(name: str, size: int, refs: list[tuple[int, int]],
                text: str) -> tuple[list[int], list[int]]:
    """An axis' pieces and, per ref in the listed order, the piece it aggregates (XLA's
    HandleSingleAxisRefPerDimension and HandleMultiAxisRefPerDimension): sub-axes sorted by
    pre-size, a padding piece where one does not start where the previous ended, a rest piece
    to the full size."""
    if not refs:
        return [size], []
    if refs == [(0, 0)]:
        return [size], [0]
    if any(sub == 0 for _, sub in refs):
        raise TextSyntaxError(f"axis {name} is listed whole and in parts in '{text}'", 0)
    order = sorted(range(len(refs)), key=lambda k: refs[k][0])
    pieces: list[int] = []
    at: dict[int, int] = {}
    reached = 1
    for k in order:
        pre, sub = refs[k]
        if pre % reached or size % (pre * sub):
            raise TextSyntaxError(f"sub-axis {name}:({pre}){sub} does not divide axis {name} of "
                                  f"size {size} in '{text}'", 0)
        if pre != reached:
            pieces.append(pre // reached)
        at[k] = len(pieces)
        pieces.append(sub)
        reached = pre * sub
    if len(refs) == 1 or reached != size:
        pieces.append(size // reached)
    return pieces, [at[k] for k in range(len(refs))]


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
