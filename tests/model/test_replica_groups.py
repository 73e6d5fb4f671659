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
