"""Replica groups as XLA prints them: explicit lists and the iota form, expanded exactly as
XLA's IotaReplicaGroupList (checked by hand and against XLA's own IotaTileAssignment)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from iota_oracle import xla_iota_order

from hloscope.model.replica_groups import (
    iota_transposed,
    parse_nested_ints,
    parse_replica_groups,
)
from hloscope.model.shape_text import TextSyntaxError


def test_hand_computed_iota_groups() -> None:
    # iota(8) as 4x2 = [[0,1],[2,3],[4,5],[6,7]]; transposed: [[0,2,4,6],[1,3,5,7]]
    assert parse_replica_groups("[2,4]<=[4,2]T(1,0)") == ((0, 2, 4, 6), (1, 3, 5, 7))
    assert parse_replica_groups("[2,4]<=[8]") == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert parse_replica_groups("[4,2]<=[2,4]T(1,0)") == ((0, 4), (1, 5), (2, 6), (3, 7))
    # 2x2x2 cube, keep axis 1 last: groups pair ids differing in the middle bit
    assert parse_replica_groups("[4,2]<=[2,2,2]T(0,2,1)") == ((0, 2), (1, 3), (4, 6), (5, 7))
    assert parse_replica_groups("[1,4]<=[4]") == ((0, 1, 2, 3),)


def test_explicit_groups() -> None:
    assert parse_replica_groups("{{0,1},{2,3}}") == ((0, 1), (2, 3))
    assert parse_replica_groups("{}") == ()
    assert parse_replica_groups("{{0,1,2,3}}") == ((0, 1, 2, 3),)
    assert parse_nested_ints("{{0,1},{1,2},{2,0}}") == ((0, 1), (1, 2), (2, 0))


@pytest.mark.parametrize("text", ["[2,4]<=[4,3]", "[2,4]<=[4,2]T(0,0)", "[8]<=[8]",
                                  "{{0,1},x}", "{0,1"])
def test_malformed_groups_are_syntax_errors(text: str) -> None:
    with pytest.raises(TextSyntaxError):
        parse_replica_groups(text)


CASES = [((4, 2), (1, 0)), ((8,), (0,)), ((2, 4, 8), (2, 0, 1)), ((4, 4, 2), (1, 2, 0)),
         ((2, 2, 2, 4), (3, 1, 0, 2)), ((16, 32), (1, 0))]


@pytest.mark.parametrize(("dims", "permutation"), CASES)
def test_expansion_matches_numpy(dims: tuple[int, ...], permutation: tuple[int, ...]) -> None:
    expected = np.arange(np.prod(dims)).reshape(dims).transpose(permutation).ravel().tolist()
    assert iota_transposed(dims, permutation) == expected


@pytest.mark.parametrize(("dims", "permutation"), CASES)
def test_expansion_matches_xla(dims: tuple[int, ...], permutation: tuple[int, ...]) -> None:
    xla = xla_iota_order(dims, permutation)
    if xla is None:
        pytest.skip("jaxlib's HloSharding.iota_tile is not available")
    assert iota_transposed(dims, permutation) == xla


def test_every_permutation_of_a_small_cube_matches_xla() -> None:
    for permutation in itertools.permutations(range(3)):
        xla = xla_iota_order((2, 3, 4), permutation)
        if xla is None:
            pytest.skip("jaxlib's HloSharding.iota_tile is not available")
        assert iota_transposed((2, 3, 4), permutation) == xla


def test_mesh_axes_groups_by_hand() -> None:
    """The mesh-axes form libtpu prints (seen on a v5e:2x2 offload build)."""
    assert parse_replica_groups("mesh['axis_0'=4,'axis_1'=1,'axis_2'=1] {'axis_0','axis_1'}") \
        == ((0, 1, 2, 3),)
    # ids 0..7 on a 2x4 mesh: row r holds 4r..4r+3
    assert parse_replica_groups("mesh['a'=2,'b'=4] {'a'}") == ((0, 4), (1, 5), (2, 6), (3, 7))
    assert parse_replica_groups("mesh['a'=2,'b'=4] {'b'}") == ((0, 1, 2, 3), (4, 5, 6, 7))
    # a sub-axis: 'a' of 8 split (2, 2, 2), the middle factor grouped
    assert parse_replica_groups("mesh['a'=8] {'a':(2)2}") == ((0, 2), (1, 3), (4, 6), (5, 7))
    with pytest.raises(TextSyntaxError):
        parse_replica_groups("mesh['a'=2] {'c'}")


# The mesh form with a device order (XLA's Mesh::ToString appends `, device_ids=(...)` when the
# mesh's device array is not a plain iota: an iota `[dims]T(perm)` or the ids listed row-major),
# as libtpu writes it on a v5e 4x4 data x model mesh (issue 37). Expected groups worked out by
# hand from the device array, each comment says how.

def test_mesh_with_iota_device_ids_from_libtpu() -> None:
    # devices: iota(16) as [4,4], transposed, flattened: 0,4,8,12, 1,5,9,13, 2,6,... laid on the
    # mesh [4,1,4] row-major, so device(a0, 0, a2) = 4*a2 + a0; grouping axis_0 (a0 varies)
    # gives 4*a2 + {0,1,2,3} for each a2.
    text = "mesh['axis_0'=4,'axis_1'=1,'axis_2'=4], device_ids=([4,4]T(1,0)) {'axis_0'}"
    assert parse_replica_groups(text) == ((0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11),
                                          (12, 13, 14, 15))
    # without the device order, axis_0 strides by 4
    assert parse_replica_groups(text.replace(", device_ids=([4,4]T(1,0))", "")) == \
        ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15))
    # grouping axis_2 instead: device(a0, 0, a2) = 4*a2 + a0 for a2 = 0..3
    assert parse_replica_groups(text.replace("{'axis_0'}", "{'axis_2'}")) == \
        ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15))


def test_mesh_with_listed_device_ids() -> None:
    # device(x, y) = [[0, 2], [1, 3]][x][y]
    assert parse_replica_groups("mesh['x'=2,'y'=2], device_ids=(0,2,1,3) {'x'}") == \
        ((0, 1), (2, 3))
    assert parse_replica_groups("mesh['x'=2,'y'=2], device_ids=(0,2,1,3) {'y'}") == \
        ((0, 2), (1, 3))
    # unquoted axis names (XLA's own Mesh::ToString), blanks as XLA's lexer allows
    assert parse_replica_groups("mesh[x=2,y=2], device_ids=( 0, 2, 1, 3 ) {x}") == \
        ((0, 1), (2, 3))


def test_mesh_with_a_four_axis_iota_device_order() -> None:
    # XLA's named-sharding test prints mesh a=2,b=4,c=4,d=2 over TileAssignment
    # ([2,4,4,2], reshape [1,4,1,16], perm (2,3,0,1)) as device_ids=([4,16]T(1,0)): devices are
    # iota(64) as [4,16] transposed, i.e. flat position k holds 16*(k % 4) + k // 4. Grouping 'a'
    # (stride 32 in k) from k = 0: positions 0 and 32 hold 0 and 8.
    groups = parse_replica_groups("mesh['a'=2,'b'=4,'c'=4,'d'=2], device_ids=([4,16]T(1,0)) "
                                  "{'a'}")
    assert len(groups) == 32 and groups[0] == (0, 8)
    assert groups[1] == (16, 24)  # k = 1 and 33: 16*1 + 0, 16*1 + 8
    assert sorted(d for g in groups for d in g) == list(range(64))


def test_mesh_with_two_sub_axes_of_one_axis() -> None:
    # XLA's example: {a:(1)2, a:(4)2} on a=8 reshapes [8] to [2,2,2] and groups pieces 0 and 2:
    # a = 4*i0 + 2*i1 + i2 grouped over (i0, i2) for each i1.
    assert parse_replica_groups("mesh['a'=8] {'a':(1)2,'a':(4)2}") == ((0, 1, 4, 5), (2, 3, 6, 7))
    # listed the other way round, the group's order follows the listing: i2 major, then i0
    assert parse_replica_groups("mesh['a'=8] {'a':(4)2,'a':(1)2}") == ((0, 4, 1, 5), (2, 6, 3, 7))


@pytest.mark.parametrize("text", [
    "mesh['x'=2,'y'=2], device_ids=(0,1,2) {'x'}",  # 3 ids for 4 devices
    "mesh['x'=2,'y'=2], device_ids=(0,1,1,3) {'x'}",  # not a permutation
    "mesh['x'=2,'y'=2], device_ids=([3,2]T(1,0)) {'x'}",  # 6 devices
    "mesh['x'=2,'y'=2], device_ids=([2,2]T(0,0)) {'x'}",  # not a permutation of dims
    "mesh['a'=8] {'a':(3)2}",  # does not divide
    "mesh['a'=8] {'a','a':(1)2}",  # whole and in parts
])
def test_malformed_mesh_refused(text: str) -> None:
    with pytest.raises(TextSyntaxError):
        parse_replica_groups(text)
