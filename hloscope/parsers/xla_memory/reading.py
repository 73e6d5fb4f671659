"""Reading XLA's memory dump files: text (plain or .gz), bytes, and located parse errors.

Every reader of this package takes text plus a source name and reports malformed input as a
`ParseError` at file:line:col with the offending line; a missing or unreadable file is an
`InputError`. Numbers in the live-range dump are printed with a space every three digits
(`99 909 636 bytes`); `spaced_int` reads both forms.
"""
from __future__ import annotations

import gzip
from pathlib import Path

from hloscope.errors import InputError, ParseError, SourceLocation


def read_text(path: str | Path) -> str:
    """The file's text; .gz files are decompressed. InputError / ParseError (not UTF-8)."""
    data = read_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise ParseError(f"not UTF-8 text (byte 0x{data[error.start]:02x}): is this an XLA "
                         "dump file?", SourceLocation(str(path), line, column)) from None


def read_bytes(path: str | Path) -> bytes:
    """The file's bytes; .gz files are decompressed."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InputError(f"{path}: cannot read: {error.strerror or error}") from None
    if path.suffix != ".gz":
        return data
    try:
        return gzip.decompress(data)
    except (gzip.BadGzipFile, EOFError, OSError) as error:
        raise ParseError(f"damaged gzip data: {error}", SourceLocation(str(path), 1, 1)) from None


def error_at(message: str, source: str, number: int, line: str, column: int = 1) -> ParseError:
    """A ParseError at 1-based `number`:`column` of `source`, showing `line`."""
    return ParseError(message, SourceLocation(source, number, max(column, 1)), line)


def spaced_int(text: str) -> int:
    """`27 108 624` or `27108624` -> 27108624 (ValueError otherwise)."""
    digits = text.strip().replace(" ", "")
    if not digits.lstrip("-").isdigit():
        raise ValueError(f"not an integer: {text!r}")
    return int(digits)


def shape_index(text: str) -> tuple[int, ...]:
    """`{}` / `{0,1}` / `{0, 1}` -> a tuple (ValueError otherwise)."""
    inner = text.strip()
    if not (inner.startswith("{") and inner.endswith("}")):
        raise ValueError(f"not a shape index: {text!r}")
    inner = inner[1:-1].strip()
    return tuple(int(part) for part in inner.split(",")) if inner else ()
