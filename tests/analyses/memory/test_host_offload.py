"""Host transfers counted as the bytes moved, on hand-built loops whose traffic is known by
construction, and on a compiled TPU program against a closed form.

The module: a while loop of 4 iterations whose body stores one f32[1,128] row (512 B) into a
pinned-host (S(5)) f32[4,128] buffer and reads it back, written both synchronously and in the
asynchronous `-start` / `-done` form TPU dumps print (an `async-start` whose tuple holds the
whole host buffer, wrapping the slice op in a called computation). Whatever the form, 4 x 512 B
go to the host and 4 x 512 B come back; XLA's own HLO parser checks that each text is HLO.
"""
from __future__ import annotations

import pytest
from xla_oracle import xla_available, xla_parse

import hloscope
from hloscope.analyses.memory.host_offload import host_transfers

TRIPS, ROW_BYTES = 4, 128 * 4
HOST = "f32[4,128]{1,0:S(5)}"
ROW = "f32[1,128]{1,0}"
STATE = f"(s32[], {ROW}, {HOST})"

SYNC_BODY = f"""\
  %stored = {HOST} dynamic-update-slice(%buffer, %row, %i, %zero)
  %back = {ROW} dynamic-slice(%stored, %i, %zero), dynamic_slice_sizes={{1,128}}"""
PUT = f"(({HOST}, {ROW}, s32[], s32[]), {HOST}, u32[])"
ASYNC_BODY = f"""\
  %put = {PUT} async-start(%buffer, %row, %i, %zero), calls=%put_row
  %stored = {HOST} async-done(%put)
  %get = (({HOST}, s32[], s32[]), {ROW}, u32[]) async-start(%stored, %i, %zero), calls=%get_row
  %back = {ROW} async-done(%get)"""
WRAPPED = f"""
%put_row (b: f32[4,128], r: f32[1,128], i: s32[], z: s32[]) -> f32[4,128] {{
  %b = {HOST} parameter(0)
  %r = {ROW} parameter(1)
  %i = s32[] parameter(2)
  %z = s32[] parameter(3)
  ROOT %dus = {HOST} dynamic-update-slice(%b, %r, %i, %z)
}}

%get_row (b: f32[4,128], i: s32[], z: s32[]) -> f32[1,128] {{
  %b = {HOST} parameter(0)
  %i = s32[] parameter(1)
  %z = s32[] parameter(2)
  ROOT %ds = {ROW} dynamic-slice(%b, %i, %z), dynamic_slice_sizes={{1,128}}
}}
"""


def offload_loop(body: str, wrapped: str = "", annotate: bool = True) -> str:
    trip_count = ', backend_config={"known_trip_count":{"n":"4"}}' if annotate else ""
    return f"""HloModule offload_loop, is_scheduled=true
{wrapped}
%cond (s: {STATE}) -> pred[] {{
  %s = {STATE} parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant({TRIPS})
  ROOT %go = pred[] compare(%i, %n), direction=LT
}}

%body (s: {STATE}) -> {STATE} {{
  %s = {STATE} parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %row = {ROW} get-tuple-element(%s), index=1
  %buffer = {HOST} get-tuple-element(%s), index=2
  %zero = s32[] constant(0)
{body}
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  ROOT %t = {STATE} tuple(%next, %back, %stored)
}}

ENTRY %main (x: f32[1,128]) -> {STATE} {{
  %x = {ROW} parameter(0)
  %start = s32[] constant(0)
  %host = {HOST} custom-call(), custom_call_target="AllocateBuffer"
  %init = {STATE} tuple(%start, %x, %host)
  ROOT %loop = {STATE} while(%init), condition=%cond, body=%body{trip_count}
}}
"""


FORMS = {"sync": offload_loop(SYNC_BODY), "async": offload_loop(ASYNC_BODY, WRAPPED),
         "inferred": offload_loop(ASYNC_BODY, WRAPPED, annotate=False)}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_row_moves_once_each_way_per_iteration(form: str) -> None:
    transfers = host_transfers(hloscope.load(FORMS[form]))
    assert transfers.to_host_bytes == TRIPS * ROW_BYTES == 2048
    assert transfers.from_host_bytes == TRIPS * ROW_BYTES
    assert transfers.instructions == 2 and transfers.unknown_loops == 0


@pytest.mark.skipif(not xla_available(), reason="jaxlib's HLO parser is not importable")
@pytest.mark.parametrize("form", sorted(FORMS))
def test_the_hand_built_modules_are_hlo(form: str) -> None:
    computations = xla_parse(FORMS[form])
    opcodes = {i.opcode for instructions in computations.values() for i in instructions}
    assert {"while", "dynamic-update-slice", "dynamic-slice"} <= opcodes
    assert ("async-start" in opcodes) == (form != "sync")


def test_a_copy_between_spaces_moves_its_shape() -> None:
    text = f"""HloModule copies, is_scheduled=true

ENTRY %main (x: f32[1,128]) -> f32[1,128] {{
  %x = {ROW} parameter(0)
  %out = ({ROW.replace("}", ":S(5)}")}, {ROW}, u32[]) copy-start(%x)
  %on_host = {ROW.replace("}", ":S(5)}")} copy-done(%out)
  ROOT %back = {ROW} copy(%on_host)
}}
"""
    transfers = host_transfers(hloscope.load(text))
    assert (transfers.to_host_bytes, transfers.from_host_bytes) == (ROW_BYTES, ROW_BYTES)


def test_a_fused_update_moves_its_update_not_the_buffer() -> None:
    text = f"""HloModule fused, is_scheduled=true

%fused_put (b: f32[4,128], r: f32[1,128], i: s32[]) -> f32[4,128] {{
  %b = {HOST} parameter(0)
  %r = {ROW} parameter(1)
  %i = s32[] parameter(2)
  %doubled = {ROW} add(%r, %r)
  %z = s32[] constant(0)
  ROOT %dus = {HOST} dynamic-update-slice(%b, %doubled, %i, %z)
}}

ENTRY %main (x: f32[1,128], i: s32[]) -> f32[4,128] {{
  %x = {ROW} parameter(0)
  %i = s32[] parameter(1)
  %host = {HOST} custom-call(), custom_call_target="AllocateBuffer"
  ROOT %put = {HOST} fusion(%host, %x, %i), kind=kLoop, calls=%fused_put
}}
"""
    transfers = host_transfers(hloscope.load(text))
    assert (transfers.to_host_bytes, transfers.from_host_bytes) == (ROW_BYTES, 0)


def test_a_fused_slice_copied_out_moves_the_slice() -> None:
    # the form XLA:GPU prints: a custom fusion slicing the host buffer, its root a device copy
    text = f"""HloModule fused_slice, is_scheduled=true

%wrapped_slice (b: f32[4,128], i: s32[]) -> f32[1,128] {{
  %b = {HOST} parameter(0)
  %i = s32[] parameter(1)
  %z = s32[] constant(0)
  %row = {ROW} dynamic-slice(%b, %i, %z), dynamic_slice_sizes={{1,128}}
  ROOT %out = {ROW} copy(%row)
}}

ENTRY %main (i: s32[]) -> f32[1,128] {{
  %i = s32[] parameter(0)
  %host = {HOST} custom-call(), custom_call_target="AllocateBuffer"
  ROOT %get = {ROW} fusion(%host, %i), kind=kCustom, calls=%wrapped_slice
}}
"""
    transfers = host_transfers(hloscope.load(text))
    assert (transfers.to_host_bytes, transfers.from_host_bytes) == (0, ROW_BYTES)
