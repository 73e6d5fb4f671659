"""Collectives by link on hand-built modules: each of XLA's group modes, iota groups, a device
assignment whose slices are not contiguous, megascale DCN transfers, and loop trip counts.

The truth for each case is worked out by hand from XLA's definitions (CollectiveOpGroupMode):
which logical devices meet in each group, and on which slice each of them sits.
"""
from __future__ import annotations

from hloscope.analyses.cost.collectives import collectives, group_mode, participant_groups
from hloscope.loader.hlo_input import load_input

ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
"""


def module(body: str, partitions: int = 8, replicas: int = 1) -> str:
    return (f"HloModule m, replica_count={replicas}, num_partitions={partitions}\n\n{ADD}\n"
            f"ENTRY e {{\n  p = f32[256]{{0}} parameter(0)\n{body}}}\n")


def only(text: str, slices: list[int] | None):
    result = collectives(load_input(text), slices)
    assert len(result.rows) == 1
    return result, result.rows[0]


CONTIGUOUS = [0, 0, 0, 0, 1, 1, 1, 1]


def test_flattened_ids_with_iota_groups() -> None:
    text = module("  ROOT r = f32[256]{0} all-reduce(p), channel_id=1, "
                  "replica_groups=[2,4]<=[4,2]T(1,0), use_global_device_ids=true, to_apply=add\n")
    result, row = only(text, CONTIGUOUS)
    # groups {0,2,4,6} and {1,3,5,7}: each has devices of slice 0 and slice 1
    assert row.mode == "flattened_id" and row.groups == 2 and row.group_size == 4
    assert row.crosses_slices and row.link == "dcn" and result.dcn_bytes == 256 * 4
    inside = module("  ROOT r = f32[256]{0} all-reduce(p), channel_id=1, "
                    "replica_groups=[2,4]<=[8], use_global_device_ids=true, to_apply=add\n")
    result, row = only(inside, CONTIGUOUS)
    assert row.link == "ici" and result.ici_bytes == 1024 and result.dcn_bytes == 0


def test_slices_are_read_from_the_device_assignment_not_assumed_contiguous() -> None:
    text = module("  ROOT r = f32[256]{0} all-reduce(p), channel_id=1, "
                  "replica_groups={{0,1,2,3},{4,5,6,7}}, use_global_device_ids=true, "
                  "to_apply=add\n")
    interleaved = [0, 1, 0, 1, 0, 1, 0, 1]  # logical device i on slice i % 2
    assert only(text, CONTIGUOUS)[1].link == "ici"
    assert only(text, interleaved)[1].link == "dcn"
    assert only(text, None)[1].link == "unknown"


def test_cross_partition_and_cross_replica_modes() -> None:
    # all-to-all with a channel: partition ids, within each replica (2 replicas x 4 partitions)
    text = module("  ROOT r = f32[256]{0} all-to-all(p), channel_id=1, replica_groups={{0,1}},"
                  " dimensions={0}\n", partitions=4, replicas=2)
    loaded = load_input(text)
    instruction = loaded.entry.root
    assert group_mode(instruction) == "cross_partition"
    assert participant_groups(instruction, 2, 4) == [(0, 1), (4, 5)]
    # no channel: replica ids, within each partition: replica r, partition p is r * 4 + p
    text = module("  ROOT r = f32[256]{0} all-reduce(p), replica_groups={{0,1}}, to_apply=add\n",
                  partitions=4, replicas=2)
    instruction = load_input(text).entry.root
    assert group_mode(instruction) == "cross_replica"
    assert participant_groups(instruction, 2, 4) == [(0, 4), (1, 5), (2, 6), (3, 7)]
    # a channel without use_global_device_ids: replica groups, every partition of them
    text = module("  ROOT r = f32[256]{0} all-reduce(p), channel_id=3, replica_groups={{0},{1}},"
                  " to_apply=add\n", partitions=4, replicas=2)
    instruction = load_input(text).entry.root
    assert group_mode(instruction) == "cross_replica_and_partition"
    assert participant_groups(instruction, 2, 4) == [(0, 1, 2, 3), (4, 5, 6, 7)]


def test_empty_groups_are_everyone_and_permutes_are_pairs() -> None:
    # Cross-partition mode (a channel, no global ids): XLA's verifier refuses empty groups only in
    # flattened-id mode (use_global_device_ids=true).
    text = module("  ROOT r = f32[2048]{0} all-gather(p), channel_id=1, replica_groups={}, "
                  "dimensions={0}\n")
    assert only(text, CONTIGUOUS)[1].group_size == 8
    text = module("  ROOT r = f32[256]{0} collective-permute(p), channel_id=1, "
                  "source_target_pairs={{0,1},{1,2},{2,3},{3,0}}\n")
    assert only(text, CONTIGUOUS)[1].link == "ici"
    text = module("  ROOT r = f32[256]{0} collective-permute(p), channel_id=1, "
                  "source_target_pairs={{3,4},{7,0}}\n")
    assert only(text, CONTIGUOUS)[1].link == "dcn"


def test_megascale_transfers_are_dcn_and_the_slice_program_is_ici() -> None:
    """libtpu's per-slice program of a 2 x 4-device multislice compile (measured form): the
    replica groups name the slice's own 4 devices, the cross-slice reduction is a send/recv
    pair for the megascale runtime."""
    attributes = ('is_host_transfer=true, frontend_attributes={_xla_host_transfer_handler_name='
                  '"xla_megascale_runtime",_xla_host_transfer_rendezvous="all-reduce.2_0",'
                  '_xla_megascale_reduce_operation="SUM",_xla_megascale_target="{1,2}x{0:3}",'
                  '_xla_megascale_transfer_type="ALL_REDUCE"}')
    body = ("  r = f32[256]{0} all-reduce(p), channel_id=1, replica_groups={{0,1,2,3}}, "
            "use_global_device_ids=true, to_apply=add\n"
            "  t = token[] after-all()\n"
            f"  s = (f32[256]{{0}}, u32[], token[]) send(r, t), channel_id=2, {attributes}\n"
            f"  v = (f32[256]{{0}}, u32[], token[]) recv(t), channel_id=3, {attributes}\n"
            "  sd = token[] send-done(s), channel_id=2, is_host_transfer=true\n"
            "  vd = (f32[256]{0}, token[]) recv-done(v), channel_id=3, is_host_transfer=true\n"
            "  ROOT g = f32[256]{0} get-tuple-element(vd), index=0\n")
    result = collectives(load_input(module(body, partitions=4)), CONTIGUOUS)
    links = {row.opcode: row.link for row in result.rows}
    assert links == {"all-reduce": "ici", "all_reduce": "dcn"}
    assert result.dcn_bytes == 1024 and result.ici_bytes == 1024 and result.num_slices == 2


def megascale_module(target: str, slices: int) -> str:
    """The per-slice program of a `slices` x 4-device compile with one cross-slice psum whose
    `_xla_megascale_target` is `target` (the two forms libtpu writes, measured)."""
    attributes = ('is_host_transfer=true, frontend_attributes={_xla_host_transfer_handler_name='
                  '"xla_megascale_runtime",_xla_host_transfer_rendezvous="psum.7_0",'
                  f'_xla_megascale_reduce_operation="SUM",_xla_megascale_target={target},'
                  '_xla_megascale_transfer_type="ALL_REDUCE"}')
    body = ("  t = token[] after-all()\n"
            f"  s = (f32[256]{{0}}, u32[], token[]) send(p, t), channel_id=2, {attributes}\n"
            f"  v = (f32[256]{{0}}, u32[], token[]) recv(t), channel_id=1, {attributes}\n"
            "  sd = token[] send-done(s), channel_id=2, is_host_transfer=true\n"
            "  vd = (f32[256]{0}, token[]) recv-done(v), channel_id=1, is_host_transfer=true\n"
            "  ROOT g = f32[256]{0} get-tuple-element(vd), index=0\n")
    return module(body, partitions=4)


FOUR_SLICES = [s for s in range(4) for _ in range(4)]
# libtpu's deviceless ids: (slice_index + 1) x 100000 + n.
DEVICE_SLICES = {(s + 1) * 100000 + n: s for s in range(4) for n in range(4)}


def test_a_compact_megascale_target_spans_the_slices_it_lists() -> None:
    text = megascale_module('"{1,2,3,4}x{0:3}"', 4)
    row = collectives(load_input(text), FOUR_SLICES).rows[0]
    # Slices 0-3 (written 1-4), one group per device of a slice.
    assert (row.link, row.groups, row.group_size, row.slices_spanned) == ("dcn", 4, 4, 4)


def test_an_explicit_megascale_target_names_its_device_groups() -> None:
    pairs = ",".join(f"{{{s * 100000 + n},{(s + 2) * 100000 + n}}}"
                     for s in (1, 2) for n in range(4))
    text = megascale_module("{" + pairs + "}", 4)
    row = collectives(load_input(text), FOUR_SLICES, slice_of_id=DEVICE_SLICES).rows[0]
    # {100000,300000}: slices 0 and 2; {200000,400000}: slices 1 and 3 -- 8 pairs.
    assert (row.link, row.groups, row.group_size, row.slices_spanned) == ("dcn", 8, 2, 2)
    unknown = collectives(load_input(text), FOUR_SLICES).rows[0]
    assert (unknown.groups, unknown.slices_spanned) == (1, 4)  # no id map: every slice


def test_loop_trip_counts_multiply_the_bytes() -> None:
    text = f"""HloModule m, num_partitions=8

{ADD}
cond {{
  s = (s32[], f32[256]{{0}}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}}

body {{
  s = (s32[], f32[256]{{0}}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[256]{{0}} get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[256]{{0}} all-reduce(x), channel_id=1, replica_groups=[4,2]<=[2,4]T(1,0),
    use_global_device_ids=true, to_apply=add
  ROOT t = (s32[], f32[256]{{0}}) tuple(j, y)
}}

ENTRY e {{
  p = f32[256]{{0}} parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[256]{{0}}) tuple(zero, p)
  ROOT w = (s32[], f32[256]{{0}}) while(init), condition=cond, body=body
}}
"""
    result, row = only(text, CONTIGUOUS)
    # groups {0,4},{1,5},{2,6},{3,7}: one device of each slice: the data-parallel reduction
    assert row.link == "dcn" and row.group_size == 2 and row.groups == 4
    assert result.dcn_bytes == 5 * 256 * 4


def test_a_group_syntax_it_cannot_read_leaves_the_link_unknown() -> None:
    text = module("  ROOT r = f32[256]{0} all-reduce(p), channel_id=1, "
                  "replica_groups=mesh['a'=8] {'zz'}, use_global_device_ids=true, "
                  "to_apply=add\n")
    result, row = only(text, CONTIGUOUS)
    assert row.link == "unknown" and result.unknown_bytes == 1024
