"""XLA's out-of-memory messages in a compile log or error text.

Three families are recognised, each kept with the line it came from:

- **TPU compile verdicts** (libtpu, `RESOURCE_EXHAUSTED`): the one-line form jax 0.10.2's libtpu
  prints, `Ran out of memory on HBM, the total memory required for HLO temporaries (16.72G)
  exceeds available HBM (15.75G).`, and the longer form older libtpu prints, `Ran out of memory in
  memory space hbm. Used 20.25G of 15.48G hbm. Exceeded hbm capacity by 4.77G.`
- **XLA's rematerialization warning** (GPU compiles never fail for memory): `Can't reduce memory
  use below 7.45GiB (8000000000 bytes) by rematerialization; only reduced to 12.07GiB
  (12960000000 bytes)`, optionally `, down from ... originally`.
- **Runtime allocation failures**: `Out of memory while trying to allocate 34359738368 bytes.`
  (PjRt / BFC allocators, also with a unit: `allocate 12.00GiB`), the BFC form `ran out of memory
  trying to allocate 2.00GiB (rounded to 2147483648)`, and TPU's `Attempting to reserve 20.25G at
  the bottom of memory. That was not possible. There are 15.10G free`.

Sizes follow XLA: bare K/M/G/T suffixes are binary units (`units.parse_bytes`); an exact byte
count printed beside a human-readable one is preferred. Text without any of these yields an empty
`CompileLog`; nothing here raises on odd text (a log is free-form).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hloscope.errors import InputError, UsageError
from hloscope.units import parse_bytes

_SIZE = r"(\d+(?:\.\d+)?\s*(?:[KMGTP]i?B?|B|bytes)?)"
_EXACT = r"(?:\s*\((\d+) bytes\))?"

TPU_TEMPORARIES = re.compile(
    r"total memory required for HLO temporaries \(" + _SIZE + r"\) exceeds available "
    r"(\w+) \(" + _SIZE + r"\)")
TPU_MEMORY_SPACE = re.compile(
    r"Ran out of memory in memory space (\w+)\. Used " + _SIZE + r" of " + _SIZE + r" \w+\.")
REMAT_WARNING = re.compile(
    r"Can't reduce memory use below " + _SIZE + _EXACT + r" by rematerialization; "
    r"only reduced to " + _SIZE + _EXACT + r"(?:, down from " + _SIZE + _EXACT + r" originally)?")
ALLOCATE = re.compile(r"Out of memory while trying to allocate " + _SIZE)
BFC_ALLOCATE = re.compile(r"ran out of memory trying to allocate " + _SIZE +
                          r"(?: \(rounded to (\d+)\))?")
TPU_RESERVE = re.compile(r"Attempting to reserve " + _SIZE + r" at the bottom of memory\. "
                         r"That was not possible\. There are " + _SIZE + r" free")


@dataclass(frozen=True, slots=True)
class OomMessage:
    """One out-of-memory statement: what needed how much, of how much available."""

    kind: str  # "tpu-compile", "remat-warning", "allocation"
    required_bytes: int | None
    available_bytes: int | None
    memory_space: str | None
    text: str
    line: int  # 1-based line number in the log
    original_bytes: int | None = None  # remat warning: the peak before rematerialization

    @property
    def excess_bytes(self) -> int | None:
        if self.required_bytes is None or self.available_bytes is None:
            return None
        return self.required_bytes - self.available_bytes

    def to_dict(self) -> dict:
        return {**asdict(self), "excess_bytes": self.excess_bytes}


@dataclass(frozen=True, slots=True)
class CompileLog:
    """Every OOM statement of a log, in order of appearance."""

    source: str
    messages: tuple[OomMessage, ...] = field(default_factory=tuple)

    def first(self, kind: str) -> OomMessage | None:
        return next((m for m in self.messages if m.kind == kind), None)

    @property
    def compile_verdict(self) -> OomMessage | None:
        """The TPU compiler's OOM verdict, if the log has one."""
        return self.first("tpu-compile")

    @property
    def available_bytes(self) -> int | None:
        """The capacity the log states (a TPU verdict's available HBM), if any."""
        verdict = self.compile_verdict
        return None if verdict is None else verdict.available_bytes

    def to_dict(self) -> dict:
        return {"source": self.source, "messages": [m.to_dict() for m in self.messages]}


def read_compile_log(path: str | Path) -> CompileLog:
    """The OOM statements of a log file; InputError when it cannot be read."""
    path = Path(path)
    try:
        text = path.read_text(errors="replace")
    except OSError as error:
        raise InputError(f"{path}: cannot read the log ({error.strerror or error})") from None
    return parse_compile_log(text, str(path))


def parse_compile_log(text: str, source: str = "<log>") -> CompileLog:
    messages: list[OomMessage] = []
    for number, line in enumerate(text.splitlines(), start=1):
        messages.extend(_line_messages(line, number))
    return CompileLog(source, tuple(messages))


def _line_messages(line: str, number: int) -> list[OomMessage]:
    found = [parser(line, number) for parser in _PARSERS]
    return [message for message in found if message is not None]


def _tpu_verdict(pattern: re.Pattern[str], required: int, available: int,
                 space: int) -> Callable[[str, int], OomMessage | None]:
    """A parser of one TPU verdict form: which groups hold the sizes and the memory space."""

    def parse(line: str, number: int) -> OomMessage | None:
        match = pattern.search(line)
        if match is None:
            return None
        return OomMessage("tpu-compile", size(match.group(required)),
                          size(match.group(available)), match.group(space).lower(),
                          match.group(0), number)

    return parse


def _remat(line: str, number: int) -> OomMessage | None:
    match = REMAT_WARNING.search(line)
    if match is None:
        return None
    limit = _exact_or_size(match.group(2), match.group(1))
    reached = _exact_or_size(match.group(4), match.group(3))
    original = _exact_or_size(match.group(6), match.group(5)) if match.group(5) else None
    return OomMessage("remat-warning", reached, limit, None, match.group(0), number,
                      original_bytes=original)


def _allocate(line: str, number: int) -> OomMessage | None:
    match = ALLOCATE.search(line)
    if match is not None:
        return OomMessage("allocation", size(match.group(1)), None, None, match.group(0), number)
    match = BFC_ALLOCATE.search(line)
    if match is not None:
        return OomMessage("allocation", _exact_or_size(match.group(2), match.group(1)), None,
                          None, match.group(0), number)
    match = TPU_RESERVE.search(line)
    if match is not None:
        return OomMessage("allocation", size(match.group(1)), size(match.group(2)), "hbm",
                          match.group(0), number)
    return None


_PARSERS = (_tpu_verdict(TPU_TEMPORARIES, 1, 3, 2), _tpu_verdict(TPU_MEMORY_SPACE, 2, 3, 1),
            _remat, _allocate)


def _exact_or_size(exact: str | None, human: str) -> int | None:
    return int(exact) if exact else size(human)


def size(text: str) -> int | None:
    """XLA's printed size (`16.72G`, `7.45GiB`, `2048 bytes`) in bytes; None when unreadable."""
    cleaned = text.strip().removesuffix("bytes").strip()
    try:
        return parse_bytes(cleaned)
    except UsageError:
        return None
