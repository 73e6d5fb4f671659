"""The one loader of HLO input: a text file, a .gz file, an XLA dump folder, a `hloscope build`
folder, `-` for standard input, or HLO text itself.

A dump folder holds one `module_NNNN.<name>.<backend>_after_optimizations.txt` per program; the main
one is the train step (`parsers.dump_folder.main_dump_file`: the largest module with a backward
pass) unless `module` names another (by module name, file name or program id NNNN); why it was
chosen is `HloModule.chosen_because`.
A build folder is read through its `dump/`. A file holding several modules is read whole; the
largest module is picked the same way. The modules that were not picked are listed in
`HloModule.alternatives` so reports can name them. What lies beside the module (XLA's memory
files, a build manifest, a capture record) is `Program`'s business (`program.py`).
"""
from __future__ import annotations

import logging
import sys
from pathlib import Path

from hloscope.errors import InputError
from hloscope.formats.build import DUMP_FOLDER, is_build_folder
from hloscope.model.module import HloModule
from hloscope.parsers.checks import check_module, lenient_warnings
from hloscope.parsers.checks.signatures import check_signatures
from hloscope.parsers.dump_folder import (
    AFTER_OPTIMIZATIONS,
    choose_dump_file,
    dump_files,
    main_dump_file,
)
from hloscope.parsers.hlo_file import load_file, looks_like_text, parse_stream, parse_text

_LOG = logging.getLogger("hloscope")


def load_input(source: str | Path, module: str | None = None,
               lenient: bool = False) -> HloModule:
    """Loads the selected module from a path, `-`, or HLO text (see the module docstring), and
    checks it as XLA's parser does (`hloscope.parsers.checks`) unless `lenient`."""
    if isinstance(source, str) and looks_like_text(source):
        return _checked(_pick(parse_text(source), module, "<text>"), lenient)
    if str(source) == "-":
        return _checked(_pick(parse_stream(sys.stdin, "<stdin>"), module, "<stdin>"), lenient)
    path = Path(source)
    if path.is_dir():
        return load_dump_folder(path, module, lenient)
    return _checked(_pick(load_file(path), module, str(path)), lenient)


def _checked(module: HloModule, lenient: bool) -> HloModule:
    """The semantic checks XLA's parser makes (ParseError, exit 4), skipped when `lenient`,
    but for the called computations' signatures, which every analysis relies on; what a
    lenient load lets through that XLA refuses is logged as a warning (stderr by default)."""
    if not lenient:
        check_module(module)
        return module
    check_signatures(module)
    for warning in lenient_warnings(module):
        _LOG.warning(warning)
    return module


def hlo_folder(folder: Path) -> Path:
    """The folder holding the dump files: `folder` itself, or its `dump/` for a build folder."""
    nested = folder / DUMP_FOLDER
    if is_build_folder(folder) and nested.is_dir() and not dump_files(folder):
        return nested
    return folder


def load_dump_folder(folder: Path, module: str | None = None,
                     lenient: bool = False) -> HloModule:
    """The selected module of a dump folder (or of a build folder's dump/)."""
    folder = hlo_folder(folder)
    files = dump_files(folder)
    if not files:
        raise InputError(f"{folder}: no HLO module files (*{AFTER_OPTIMIZATIONS}) in this folder")
    chosen, because = main_dump_file(files) if module is None else \
        (choose_dump_file(files, module, folder), "")
    loaded = _pick(load_file(chosen.path), None, str(chosen.path))
    loaded.alternatives = tuple(f.path.name for f in files if f is not chosen)
    if len(files) > 1:
        loaded.chosen_because = because
    return _checked(loaded, lenient)


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



def load_all(source: str | Path, lenient: bool = False) -> list[HloModule]:
    """Every module of a file or text, in order (a dump folder gives its selected module), each
    checked as `load_input` checks it unless `lenient`."""
    if isinstance(source, str) and looks_like_text(source):
        return [_checked(m, lenient) for m in parse_text(source)]
    path = Path(source)
    if path.is_dir():
        return [load_dump_folder(path, lenient=lenient)]
    return [_checked(m, lenient) for m in load_file(path)]
