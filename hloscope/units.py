"""Units for humans: bytes in binary units (KiB, MiB, ...), FLOPs in SI units (kFLOP, GFLOP, ...).

Formatting keeps three significant digits ("1.50 GiB", "15.8 GiB", "512 MiB", "12.3 GFLOP"), so a
formatted value is within 0.5% of the exact one; values that are whole multiples of a unit below
1000 of it format exactly and parse back to the same integer.

`parse_bytes` reads what people type for sizes: a bare integer of bytes, SI units (KB, MB, GB, TB:
powers of 1000), binary units (KiB, MiB, GiB, TiB: powers of 1024) and, as XLA prints them in OOM
messages, bare K, M, G, T meaning binary units ("15.75G" is 15.75 GiB). Units are case-insensitive.
`parse_threshold` also accepts a percentage ("2%") for limits relative to a baseline.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction

from hloscope.errors import UsageError

BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
FLOP_UNITS = ("FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP")

_PREFIXES = "kmgtpe"
_SIZE = re.compile(r"\s*(?P<number>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>[A-Za-z]*)\s*")
_PERCENT = re.compile(r"\s*(?P<number>\d+(?:\.\d*)?|\.\d+)\s*%\s*")


def _unit_factors() -> dict[str, int]:
    factors = {"": 1, "b": 1, "byte": 1, "bytes": 1}
    for power, prefix in enumerate(_PREFIXES, start=1):
        factors[prefix] = 1024**power
        factors[f"{prefix}ib"] = 1024**power
        factors[f"{prefix}b"] = 1000**power
    return factors


_UNIT_FACTORS = _unit_factors()


def format_bytes(count: int | float) -> str:
    """`1536` -> "1.50 KiB", `512` -> "512 B", `3 * 2**30` -> "3.00 GiB"."""
    return _format_scaled(count, 1024, BINARY_UNITS)


def format_flops(count: int | float) -> str:
    """`12_345_000_000` -> "12.3 GFLOP", `999` -> "999 FLOP"."""
    return _format_scaled(count, 1000, FLOP_UNITS)


def _format_scaled(value: int | float, base: int, units: tuple[str, ...]) -> str:
    if not math.isfinite(value):
        return f"{value} {units[0]}"
    sign = "-" if value < 0 else ""
    magnitude, exponent = abs(value), 0
    while magnitude >= base and exponent < len(units) - 1:
        magnitude, exponent = magnitude / base, exponent + 1
    digits = f"{round(magnitude)}" if exponent == 0 else _three_digits(magnitude)
    if float(digits) >= base and exponent < len(units) - 1:
        digits, exponent = _three_digits(float(digits) / base), exponent + 1
    return f"{sign}{digits} {units[exponent]}"


def _three_digits(magnitude: float) -> str:
    for decimals, limit in ((2, 10), (1, 100)):
        text = f"{magnitude:.{decimals}f}"
        if float(text) < limit:
            return text
    return f"{magnitude:.0f}"


def format_seconds(seconds: int | float) -> str:
    """0.00026 -> "260 µs", 0.6677 -> "668 ms", 1.07 -> "1.07 s": three significant digits in
    the largest unit the value reaches (ns at the smallest)."""
    if seconds == 0:
        return "0 s"
    sign, magnitude = ("-" if seconds < 0 else ""), abs(seconds)
    units = (("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3), ("s", 1.0))
    index = max((i for i, (_, scale) in enumerate(units) if magnitude >= scale), default=0)
    text = _three_digits(magnitude / units[index][1])
    if float(text) >= 1000 and index < len(units) - 1:  # 999.6 ms rounds up to 1.00 s
        index += 1
        text = _three_digits(magnitude / units[index][1])
    return f"{sign}{text} {units[index][0]}"


def format_duration(seconds: float) -> str:
    """12s, 3m05s, 1h02m: what a person reads at a glance."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def parse_bytes(text: str) -> int:
    """ "16GiB" -> 17179869184, "1.5 GB" -> 1500000000, "4096" -> 4096; UsageError otherwise."""
    match = _SIZE.fullmatch(text)
    if match is None:
        raise UsageError(_size_problem(text))
    factor = _UNIT_FACTORS.get(match.group("unit").lower())
    if factor is None:
        raise UsageError(f"{text!r}: unknown unit {match.group('unit')!r}; {_SIZE_HINT}")
    exact = Decimal(match.group("number")) * factor
    if factor == 1 and exact != exact.to_integral_value():
        raise UsageError(f"{text!r}: a size in bytes must be a whole number")
    return int(exact.to_integral_value(rounding=ROUND_HALF_EVEN))


_SIZE_HINT = "write a size like 4096, 64MiB, 1.5GiB or 2GB"


def _size_problem(text: str) -> str:
    if _PERCENT.fullmatch(text):
        return f"{text!r} is a percentage, not a size; {_SIZE_HINT}"
    if text.strip().startswith("-"):
        return f"{text!r}: a size cannot be negative"
    return f"{text!r} is not a size; {_SIZE_HINT}"


@dataclass(frozen=True, slots=True)
class Threshold:
    """A limit given in bytes ("64MiB") or as a fraction of a baseline ("2%" is 0.02)."""

    bytes: int | None = None
    fraction: Fraction | None = None  # exact: "29%" is 29/100, not the float nearest to 0.29

    def limit(self, baseline: int) -> float:
        """The limit in bytes for a given baseline."""
        if self.bytes is not None:
            return float(self.bytes)
        return float((self.fraction or 0) * baseline)

    def __str__(self) -> str:
        if self.bytes is not None:
            return format_bytes(self.bytes)
        return f"{float((self.fraction or 0) * 100):g}%"


def parse_threshold(text: str) -> Threshold:
    """ "2%" -> Threshold(fraction=Fraction(2, 100)); "64MiB" -> Threshold(bytes=67108864)."""
    match = _PERCENT.fullmatch(text)
    if match is not None:
        return Threshold(fraction=Fraction(match.group("number")) / 100)
    return Threshold(bytes=parse_bytes(text))
