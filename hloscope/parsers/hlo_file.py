"""Reading HLO text: one file (gzip-compressed when it ends in .gz), a stream, or text itself.

Every module in the input is returned in order; which one a command analyses is the loader's
choice (`hloscope.loader`). A byte that is not UTF-8 is reported at its exact line and column.
A file (plain or .gz) is read in chunks of CHUNK characters and text in a string whole (the
parser's C accelerator reads a run of lines per call); standard input line by line.
"""
from __future__ import annotations

import gzip
import io
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from hloscope.errors import InputError, ParseError, SourceLocation
from hloscope.model.module import HloModule
from hloscope.parsers.text import TextParser, parse_chunks, parse_lines

CHUNK = 1 << 16  # characters read at a time from a file (64 K: little memory, few calls)


def parse_text(text: str, source: str = "<text>") -> list[HloModule]:
    """Every module of HLO text held in a string (lines split at `\\n`, as io.StringIO's)."""
    return parse_chunks((text,), source)


def looks_like_text(source: str) -> bool:
    """Whether a string given as input is HLO text itself rather than a path."""
    return "\n" in source or source.lstrip().startswith("HloModule ")


def load_file(path: Path) -> list[HloModule]:
    """Every module in one HLO text file (gzip-compressed when it ends in .gz)."""
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    try:
        handle = _open_text(path)
    except OSError as error:
        raise InputError(f"{path}: cannot read: {error.strerror or error}") from None
    with handle:
        try:
            return _parse_chunked(handle, str(path))
        except ParseError as error:
            if error.message.startswith(NOT_UTF8):
                raise _locate_decode_error(path) from None
            raise


def _open_text(path: Path) -> io.TextIOBase:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")  # noqa: SIM115  (closed by the caller)
    return open(path, encoding="utf-8")  # noqa: SIM115


def parse_stream(lines: Iterable[str], source: str) -> list[HloModule]:
    counter = _LineCounter(lines)
    with _read_errors(source, lambda: counter.count):
        return parse_lines(counter, source)


@contextmanager
def _read_errors(source: str, lines_read: Callable[[], int]) -> Iterator[None]:
    """Read and decoding failures as located hloscope errors, placed at the line after the
    last complete one read (a decoding error is then placed exactly by the caller)."""
    try:
        yield
    except UnicodeDecodeError:
        raise ParseError(f"{NOT_UTF8}: is this an HLO text file?",
                         SourceLocation(source, lines_read() + 1, 1)) from None
    except (gzip.BadGzipFile, EOFError) as error:
        raise ParseError(f"damaged gzip data: {error}",
                         SourceLocation(source, lines_read() + 1, 1)) from None
    except OSError as error:
        raise InputError(f"{source}: cannot read: {error.strerror or error}") from None


NOT_UTF8 = "not UTF-8 text"


def _parse_chunked(handle: io.TextIOBase, source: str) -> list[HloModule]:
    """A file read CHUNK characters at a time (read errors: `_read_errors`)."""
    parser = TextParser(source)
    with _read_errors(source, lambda: parser.line_number):
        return parse_chunks(iter(lambda: handle.read(CHUNK), ""), source, parser)


def _locate_decode_error(path: Path) -> ParseError:
    """The exact line and column of the first byte that is not UTF-8."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as error:
                shown = raw[: error.start].decode("utf-8", "replace")
                return ParseError(f"{NOT_UTF8} (byte 0x{raw[error.start]:02x}): is this an HLO "
                                  "text file?", SourceLocation(str(path), number, error.start + 1),
                                  shown + "?")
    return ParseError(f"{NOT_UTF8}: is this an HLO text file?", SourceLocation(str(path), 1, 1))


class _LineCounter:
    """Counts the lines handed out, to place a decoding error."""

    def __init__(self, lines: Iterable[str]) -> None:
        self._lines = lines
        self.count = 0

    def __iter__(self) -> Iterator[str]:
        for line in self._lines:
            self.count += 1
            yield line
