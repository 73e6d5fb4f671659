"""What libtpu's INFO log says of its memory-pressure rematerialization.

libtpu writes these lines to /tmp/tpu_logs/tpu_driver.INFO, and to stderr (a build's
compile.log) with TPU_STDERR_LOG_LEVEL=0 (`workloads/runner.py` sets it for TPU compiles):

    XLA::TPU post optimization rematerialization limit 14.93G = 95% hbm (14.96G) -
        (arguments (4.03G) - aliased_output(4.03G)) - overlays (26.50M)
    XLA::TPU rematerialization hbm reduction:  16.09G => 14.17G
    Can't reduce memory use below 14.93GiB (16036098969 bytes) by rematerialization; only
        reduced to 17.08GiB (18336628736 bytes), down from 18.93GiB (20326... bytes) originally
    Chose min-memory post_order sequence: 15.88GiB

(one line each in the log). The sizes are binary (14.96G = 95% of v5e's 15.75 GiB); the
limit and reduction lines appear only when the program's schedule needs more than the limit.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from hloscope.parsers.compile_log import parse_compile_log
from hloscope.units import parse_bytes

_SIZE = r"([\d.]+)\s*(B|[KMGT](?:iB)?)?"
_LIMIT = re.compile(
    rf"XLA::TPU (?P<stage>[\w ]+?) rematerialization limit {_SIZE} = (?P<percent>\d+)% hbm "
    rf"\({_SIZE}\) - \(arguments \({_SIZE}\) - aliased_output\({_SIZE}\)\) - "
    rf"overlays \({_SIZE}\)")
_REDUCTION = re.compile(rf"XLA::TPU rematerialization hbm reduction:\s+{_SIZE} => {_SIZE}")
SCHEDULER_LINE = "Chose min-memory"  # the memory scheduler's choice: in every TPU compile's log
_SEQUENCE = re.compile(rf"{SCHEDULER_LINE} (\w+) sequence: {_SIZE}")


@dataclass(frozen=True)
class LibtpuRemat:
    """One rematerialization of the program under libtpu's memory limit (bytes, per device)."""

    stage: str  # "post optimization" (or "pre fusion")
    limit_bytes: int
    percent: int  # of the usable HBM
    hbm_bytes: int  # that percent of the usable HBM
    argument_bytes: int
    aliased_bytes: int
    overlay_bytes: int
    before_bytes: int | None  # libtpu's tracker: the schedule's peak before and after
    after_bytes: int | None

    @property
    def reached(self) -> bool | None:
        """The remat got the tracker under the limit (later passes may squeeze further)."""
        return None if self.after_bytes is None else self.after_bytes <= self.limit_bytes

    def to_dict(self) -> dict:
        return {**asdict(self), "reached": self.reached}


@dataclass(frozen=True)
class LibtpuLog:
    rematerializations: tuple[LibtpuRemat, ...]
    min_memory_sequence_bytes: int | None  # the memory scheduler's chosen order's peak
    min_memory_scheduler: str | None = None  # the order it chose: list, dfs or post_order

    @property
    def rematerialization(self) -> LibtpuRemat | None:
        """The last (post-optimization) rematerialization; None when libtpu did not need one."""
        return self.rematerializations[-1] if self.rematerializations else None


def _bytes(number: str, unit: str | None) -> int:
    return parse_bytes(number + (unit or ""))


def parse_libtpu_log(text: str) -> LibtpuLog:
    """The rematerialization lines of a libtpu log (a compile.log or tpu_driver.INFO)."""
    reductions = [(_bytes(*m.group(1, 2)), _bytes(*m.group(3, 4)))
                  for m in _REDUCTION.finditer(text)]
    exact = [(m.original_bytes, m.required_bytes) for m in parse_compile_log(text).messages
             if m.kind == "remat-warning" and m.original_bytes is not None]
    limits = list(_LIMIT.finditer(text))
    remats = []
    for index, match in enumerate(limits):
        groups = match.groups()
        before, after = reductions[index] if index < len(reductions) else (None, None)
        if exact and index == len(limits) - 1:
            before, after = exact[-1]  # exact bytes, where libtpu states them (not reached)
        remats.append(LibtpuRemat(
            match.group("stage"), _bytes(groups[1], groups[2]), int(match.group("percent")),
            _bytes(groups[4], groups[5]), _bytes(groups[6], groups[7]),
            _bytes(groups[8], groups[9]), _bytes(groups[10], groups[11]), before, after))
    sequences = list(_SEQUENCE.finditer(text))
    last = sequences[-1] if sequences else None
    return LibtpuLog(tuple(remats), _bytes(*last.group(2, 3)) if last else None,
                     last.group(1) if last else None)
