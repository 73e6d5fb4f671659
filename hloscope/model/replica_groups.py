"""Replica groups and source-target pairs of collectives, as XLA prints them.

Two spellings of `replica_groups=` (XLA's CollectiveDeviceList::ToString):

- explicit: `{{0,1},{2,3}}`, or `{}` for "every participant in one group";
- iota (IotaReplicaGroupList): `[G,S]<=[d0,d1,...]T(p0,p1,...)`, G groups of S ids. XLA builds
  them as an IotaTileAssignment: iota(d0*d1*...) reshaped to the reshape dims, transposed by the
  permutation (`T(...)`, identity when absent), flattened, and cut into G rows of S. For example
  `[2,4]<=[4,2]T(1,0)` is {{0,2,4,6},{1,3,5,7}}.

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


def parse_replica_groups(text: str) -> Groups:
    """The groups of a `replica_groups` value (explicit or iota); () for `{}` (all in one)."""
    body = text.strip()
    if body.startswith("["):
        return _iota_groups(body)
    return parse_nested_ints(body)


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
