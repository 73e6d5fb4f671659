"""A collective of an HloProto printed as HLO text: its groups in each field XLA has used
(explicit in the instruction or the device list; iota in the instruction, or in the device list
as libtpu of early 2025 writes them), read back by the text parser. Truths: XLA's text syntax
(`replica_groups={{0,1},{2,3}}`, `[4,2]<=[2,4]T(1,0)`) and the groups those spell by hand."""
from __future__ import annotations

import io

import pytest

from hloscope.model.replica_groups import parse_replica_groups
from hloscope.parsers.text import parse_lines
from hloscope.parsers.trace.hlo_text import module_text
from hloscope.parsers.xla_memory.proto_schema import message_class


def _module(set_groups) -> str:
    module = message_class("xla.HloModuleProto")(name="m", entry_computation_id=1)
    entry = module.computations.add(name="main", id=1, root_id=2)
    shape = {"element_type": 11, "dimensions": [8], "layout": {"minor_to_major": [0]}}
    entry.instructions.add(name="p", opcode="parameter", id=3, shape=shape)
    reduce = entry.instructions.add(name="ar", opcode="all-reduce", id=2, shape=shape,
                                    operand_ids=[3], channel_id=1, use_global_device_ids=True)
    set_groups(reduce)
    return module_text(module)


def _explicit_in_instruction(reduce) -> None:
    for ids in ((0, 1), (2, 3)):
        reduce.replica_groups.add(replica_ids=ids)


def _explicit_in_list(reduce) -> None:
    for ids in ((0, 1), (2, 3)):
        reduce.collective_device_list.replica_groups.add(replica_ids=ids)


def _iota(target) -> None:
    target.num_replica_groups, target.num_devices_per_group = 4, 2
    target.iota_reshape_dims.extend([2, 4])
    target.iota_transpose_perm.extend([1, 0])


@pytest.mark.parametrize(("set_groups", "text", "groups"), [
    (_explicit_in_instruction, "{{0,1},{2,3}}", ((0, 1), (2, 3))),
    (_explicit_in_list, "{{0,1},{2,3}}", ((0, 1), (2, 3))),
    (lambda r: _iota(r.iota_collective_device_list), "[4,2]<=[2,4]T(1,0)",
     ((0, 4), (1, 5), (2, 6), (3, 7))),
    (lambda r: _iota(r.collective_device_list.iota_replica_group_list), "[4,2]<=[2,4]T(1,0)",
     ((0, 4), (1, 5), (2, 6), (3, 7))),
])
def test_groups_print_and_read_back(set_groups, text: str, groups) -> None:
    printed = _module(set_groups)
    assert f"replica_groups={text}" in printed
    assert "channel_id=1" in printed and "use_global_device_ids=true" in printed
    (module,) = parse_lines(io.StringIO(printed), "<printed>")
    reduce = next(i for _, i in module.instructions() if i.opcode == "all-reduce")
    assert tuple(map(tuple, parse_replica_groups(reduce.raw_attribute("replica_groups")))) \
        == groups
