"""One loader for every way HLO reaches hloscope: a text file, a .gz file, an XLA dump folder, `-`
for standard input, or HLO text itself.

A dump folder holds one `module_NNNN.<name>.<backend>_after_optimizations.txt` per program; the main
one is the largest unless `module` names another (by module name, file name or program id NNNN).
A file holding several modules is read whole; the largest module is picked the same way. The
module that was not picked are listed in `HloModule.alternatives` so reports can name them.
"""
from __future__ import annotations

import gzip
import io
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from hloscope.errors import InputError, ParseError, SourceLocation
from hloscope.model.module import HloModule
from hloscope.parsers.text import parse_lines

AFTER_OPTIMIZATIONS = "after_optimizations.txt"
BEFORE_OPTIMIZATIONS = "before_optimizations.txt"
_DUMP_NAME = re.compile(r"module_(\d+)\.([^.]+)\..*(?:after|before)_optimizations\.txt$")


@dataclass(frozen=True, slots=True)
class DumpFile:
    """One HLO text file in an XLA dump folder."""

    path: Path
    program_id: int
    module_name: str
    size: int


def load_input(source: str | Path, module: str | None = None) -> HloModule:
    """Loads the selected module from a path, `-`, or HLO text (see the module docstring)."""
    if isinstance(source, str) and _looks_like_text(source):
        return _pick(parse_lines(io.StringIO(source), "<text>"), module, "<text>")
    if str(source) == "-":
        return _pick(_parse_stream(sys.stdin, "<stdin>"), module, "<stdin>")
    path = Path(source)
    if path.is_dir():
        return load_dump_folder(path, module)
    return _pick(load_file(path), module, str(path))


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
            return _parse_stream(handle, str(path))
        except ParseError as error:
            if error.message.startswith(NOT_UTF8):
                raise _locate_decode_error(path) from None
            raise


def _open_text(path: Path) -> io.TextIOBase:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")  # noqa: SIM115  (closed by the caller)
    return open(path, encoding="utf-8")  # noqa: SIM115


def _parse_stream(lines: Iterable[str], source: str) -> list[HloModule]:
    counter = _LineCounter(lines)
    try:
        return parse_lines(counter, source)
    except UnicodeDecodeError:
        raise ParseError(f"{NOT_UTF8}: is this an HLO text file?",
                         SourceLocation(source, counter.count + 1, 1)) from None
    except (gzip.BadGzipFile, EOFError) as error:
        raise ParseError(f"damaged gzip data: {error}",
                         SourceLocation(source, counter.count + 1, 1)) from None
    except OSError as error:
        raise InputError(f"{source}: cannot read: {error.strerror or error}") from None


NOT_UTF8 = "not UTF-8 text"


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


def dump_files(folder: Path) -> list[DumpFile]:
    """The HLO text files of a dump folder: after-optimization ones, else before-optimization."""
    for suffix in (AFTER_OPTIMIZATIONS, BEFORE_OPTIMIZATIONS):
        found = [_dump_file(p) for p in sorted(folder.glob(f"*{suffix}")) if p.is_file()]
        if found:
            return found
    return []


def _dump_file(path: Path) -> DumpFile:
    match = _DUMP_NAME.search(path.name)
    program_id, name = (int(match.group(1)), match.group(2)) if match else (-1, path.stem)
    return DumpFile(path, program_id, name, path.stat().st_size)


BUILD_DUMP_FOLDER = "dump"
BUILD_MANIFEST = "manifest.json"
BUILD_MANIFEST_SCHEMA = "hloscope/build-manifest/v1"
"""A `hloscope build` folder keeps XLA's dump in dump/, beside manifest.json (this schema)."""


def hlo_folder(folder: Path) -> Path:
    """The folder holding the dump files: `folder` itself, or its `dump/` for a build folder."""
    nested = folder / BUILD_DUMP_FOLDER
    if (folder / BUILD_MANIFEST).is_file() and nested.is_dir() and not dump_files(folder):
        return nested
    return folder


def load_dump_folder(folder: Path, module: str | None = None) -> HloModule:
    folder = hlo_folder(folder)
    files = dump_files(folder)
    if not files:
        raise InputError(f"{folder}: no HLO module files (*{AFTER_OPTIMIZATIONS}) in this folder")
    chosen = choose_dump_file(files, module, folder)
    loaded = _pick(load_file(chosen.path), None, str(chosen.path))
    loaded.alternatives = tuple(f.path.name for f in files if f is not chosen)
    return loaded


def choose_dump_file(files: list[DumpFile], module: str | None, folder: Path) -> DumpFile:
    if module is None:
        return max(files, key=lambda f: f.size)
    for dump in files:
        if module in (dump.module_name, dump.path.name, str(dump.program_id),
                      f"{dump.program_id:04d}"):
            return dump
    names = ", ".join(sorted({f.module_name for f in files}))
    raise InputError(f"{folder}: no module named {module!r}; the folder holds: {names}")


def _pick(modules: list[HloModule], wanted: str | None, source: str) -> HloModule:
    if wanted is None:
        chosen = max(modules, key=lambda m: m.byte_size)
    else:
        matches = [m for m in modules if m.name == wanted]
        if not matches:
            names = ", ".join(m.name for m in modules)
            raise InputError(f"{source}: no module named {wanted!r}; it holds: {names}")
        chosen = matches[0]
    chosen.alternatives = tuple(m.name for m in modules if m is not chosen)
    return chosen


def load_all(source: str | Path) -> list[HloModule]:
    """Every module of a file or text, in order (a dump folder gives its selected module)."""
    if isinstance(source, str) and _looks_like_text(source):
        return parse_lines(io.StringIO(source), "<text>")
    path = Path(source)
    return [load_dump_folder(path)] if path.is_dir() else load_file(path)


def _looks_like_text(source: str) -> bool:
    return "\n" in source or source.lstrip().startswith("HloModule ")
