"""An op event of a device plane, however libtpu and XLA:GPU spell it (XSpace and trace JSON).

Both readers hand each event of a device plane's "XLA Ops", "Async XLA Ops" and "XLA Modules"
lines here as a `RawEvent` (its name, display name, merged stats and line-clock times); this
module says which op it is, of which program and run, and when it ran. The spellings, by writer
(docs/trace-captures.md, "What each writer puts where", has the table):

- **op name**: the `hlo_op` stat (XLA:CPU, XLA:GPU); else, where the event's `name` is the
  whole instruction text (libtpu: `%copy-done.4 = f32[...] copy-done(...)`), the `%name` it
  starts with; else its `display_name` (libtpu's op name beside that text); else its `name`
  (xprof's JSON export: the op name, the text in a `long_name` argument).
- **program**: the `program_id` stat (uint64 on libtpu's planes, int64 elsewhere: read as
  unsigned 64-bit); else the enclosing "XLA Modules" event named `module(program_id)`.
- **run**: the `run_id` stat, else the enclosing "XLA Modules" event's.
- **time**: libtpu stamps each op with the device's own clock, `device_offset_ps` and
  `device_duration_ps`; xprof's op statistics use those (its hlo_stats total equals their sum
  to the picosecond on the libtpu capture), while the line's offset and duration are on the
  host's clock, where a short op can be 0 ps long. Where the stats are absent the line's times
  are used. The enclosing module is found on the line's clock, the clock modules are on.
- **category**: the `hlo_category` stat libtpu writes (xprof groups by it); else empty.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Any

from hloscope.model.trace import OpEvent

OPS_LINE, ASYNC_OPS_LINE, MODULES_LINE, STEPS_LINE = (
    "XLA Ops", "Async XLA Ops", "XLA Modules", "Steps")
DEVICE_OFFSET, DEVICE_DURATION = "device_offset_ps", "device_duration_ps"
UINT64 = 1 << 64
_MODULE_ID = re.compile(r"^(?P<name>.*)\((?P<id>-?\d+)\)$")
_INSTRUCTION_TEXT = re.compile(r"^\s*(?:ROOT\s+)?%?(?P<name>[^\s=%]+)\s*=\s")


@dataclass(frozen=True, slots=True)
class RawEvent:
    """One event of a device line as either file format gives it."""

    name: str
    display_name: str
    stats: dict[str, Any]
    start_ps: int
    duration_ps: int


@dataclass(frozen=True, slots=True)
class ModuleSpan:
    """One execution of a program on the "XLA Modules" line (line clock)."""

    start_ps: int
    end_ps: int
    name: str
    program_id: int | None
    run_id: int | None


def op_name(raw: RawEvent, by_hlo_op: bool = True) -> str:
    """The HLO op an event ran (see the module docstring); without `by_hlo_op`, the name the
    event itself gives (a GPU kernel's; on the "Async XLA Ops" line `hlo_op` names the op that
    ends the transfer, and `display_name` the kind of transfer, `async-copy`)."""
    hlo_op = str(raw.stats.get("hlo_op") or "") if by_hlo_op else ""
    long_name = str(raw.stats.get("long_name") or "")
    for candidate in (hlo_op, _instruction_name(raw.name), raw.display_name, raw.name,
                      _instruction_name(long_name)):
        if candidate:
            return candidate
    return ""


def _instruction_name(text: str) -> str:
    """`copy-done.4` of `%copy-done.4 = f32[...] copy-done(...)`; "" when not instruction text."""
    match = _INSTRUCTION_TEXT.match(text)
    return match.group("name") if match else ""


def program_id(value: Any) -> int | None:
    """A program id from a stat, a name or a metadata id, read as unsigned 64-bit (libtpu's
    `/host:metadata` ids are the same number as a signed int64)."""
    try:
        number = None if value is None or value == "" else int(value)
    except (TypeError, ValueError):
        return None
    return number + UINT64 if number is not None and number < 0 else number


def int_or_none(value: Any) -> int | None:
    try:
        return None if value is None or value == "" else int(value)
    except (TypeError, ValueError):
        return None


def split_module_name(name: str) -> tuple[str, int | None]:
    """`jit_f(12190760917235803885)` -> ("jit_f", 12190760917235803885)."""
    match = _MODULE_ID.match(name)
    if not match:
        return name, None
    return match.group("name"), program_id(match.group("id"))


def module_spans(raws: list[RawEvent]) -> list[ModuleSpan]:
    """The program executions of an "XLA Modules" line, in time order."""
    spans = []
    for raw in raws:
        name, named_id = split_module_name(raw.name)
        found = program_id(raw.stats.get("program_id"))
        spans.append(ModuleSpan(raw.start_ps, raw.start_ps + raw.duration_ps, name,
                                named_id if found is None else found,
                                int_or_none(raw.stats.get("run_id"))))
    return sorted(spans, key=lambda s: s.start_ps)


class SpanFinder:
    """The module execution enclosing a time on the line clock."""

    def __init__(self, spans: list[ModuleSpan]) -> None:
        self.spans = spans
        self.starts = [span.start_ps for span in spans]

    def at(self, time_ps: int) -> ModuleSpan | None:
        index = bisect.bisect_right(self.starts, time_ps) - 1
        if index >= 0 and self.spans[index].start_ps <= time_ps <= self.spans[index].end_ps:
            return self.spans[index]
        return None


def device_op(raw: RawEvent, plane: str, line: str, span: ModuleSpan | None,
              asynchronous: bool = False) -> OpEvent:
    """The OpEvent of a device line's event (see the module docstring)."""
    stats = raw.stats
    start, duration = device_times(raw)
    module = stats.get("hlo_module") or (span.name if span else "")
    program = program_id(stats.get("program_id"))
    run = int_or_none(stats.get("run_id"))
    return OpEvent(
        name=op_name(raw, not asynchronous), module=str(module),
        program_id=program if program is not None else (span.program_id if span else None),
        run_id=run if run is not None else (span.run_id if span else None),
        start_ps=start, duration_ps=duration, plane=plane, line=line,
        category=str(stats.get("hlo_category") or ""))


def device_times(raw: RawEvent) -> tuple[int, int]:
    """(start, duration) in ps: the device clock's stats when the event has both."""
    offset, duration = int_or_none(raw.stats.get(DEVICE_OFFSET)), int_or_none(
        raw.stats.get(DEVICE_DURATION))
    if offset is None or duration is None:
        return raw.start_ps, raw.duration_ps
    return offset, duration
