"""`replica_groups=mesh[...], device_ids=(...) {...}` loads as XLA reads it: one value, its
top-level comma included, whose groups follow the device order (issue 37: libtpu writes it on a
v5e 4x4 data x model mesh). `device_ids=` anywhere else is an attribute no opcode takes."""
from __future__ import annotations

import pytest
from xla_oracle import xla_available

import hloscope
from hloscope.analyses.cost.collectives import participant_groups
from hloscope.errors import ParseError

GROUPS = "mesh['axis_0'=4,'axis_1'=1,'axis_2'=4], device_ids=([4,4]T(1,0)) {'axis_0'}"
TEXT = f"""HloModule m, num_partitions=16

%add (a: f32[], b: f32[]) -> f32[] {{
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}}

ENTRY %main (p: f32[8]) -> f32[8] {{
  %p = f32[8]{{0}} parameter(0)
  ROOT %r = f32[8]{{0}} all-reduce(%p), channel_id=1, replica_groups={GROUPS}, use_global_device_ids=true, to_apply=%add
}}
"""  # noqa: E501


@pytest.mark.skipif(not xla_available(), reason="jaxlib._hlo not available")
def test_xla_accepts_it() -> None:
    from jaxlib import _hlo

    _hlo.hlo_module_from_text(TEXT)


def test_loads_as_one_value_with_the_device_order() -> None:
    root = hloscope.load(TEXT).entry.root
    assert root.raw_attribute("replica_groups") == GROUPS
    assert "device_ids" not in root.attribute_names
    assert root.raw_attribute("use_global_device_ids") == "true"
    # devices (a0, 0, a2) = 4*a2 + a0 (see tests/model/test_replica_groups.py): axis_0 groups
    # are 4 consecutive ids
    assert participant_groups(root, replicas=1, partitions=16) == [
        (0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11), (12, 13, 14, 15)]


def test_multi_line_statement_too() -> None:
    text = TEXT.replace(", device_ids=", ",\n      device_ids=")
    assert hloscope.load(text).entry.root.raw_attribute("replica_groups").endswith("{'axis_0'}")


def test_device_ids_elsewhere_refused() -> None:
    text = TEXT.replace(f"replica_groups={GROUPS}", "device_ids=(0,1), replica_groups={}")
    with pytest.raises(ParseError, match="unexpected attribute 'device_ids'") as caught:
        hloscope.load(text)
    assert caught.value.location.line == 11
