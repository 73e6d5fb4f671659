"""`Program`: one loaded module and everything found beside it, discovered in one place.

    program = load_program("build_dir/")         # anything `load_input` takes
    program.module                               # the HloModule
    program.backend, program.target              # "tpu", "tpu:v5e:2x2" (None when unknown)
    program.build, program.capture               # a build manifest / from_jax record beside it
    program.compile_record                       # the build's record of this module's compile
    program.live_range, program.buffer_assignment  # XLA's memory files of that module
    program.compile_log                          # the compiler's messages, when known

The module is read at once; side files are read on first use and kept (cached properties), so a
command pays only for what it looks at. Where they are found:

- XLA's memory files: beside the HLO file the module was read from, sharing its
  `module_NNNN.<name>.` base (`parsers.xla_memory.find_memory_artifacts`).
- a build manifest (`formats.build`): beside that file (optimized_hlo.txt) or one folder up
  (dump/module_*.txt); `given_build` is the build the input itself names, read strictly.
- a capture record (`formats.capture`): the folder above the `dump/` that holds the file.
- the compile log: `log_path` when given; a named build's manifest error and compile.log; a
  capture's error text and log.

Analyses take a `Program` when they need any of this, and an `HloModule` otherwise; they read
side files only through these properties.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from hloscope.formats.build import BuildFolder, find_build, is_build_folder, read_build
from hloscope.formats.capture import CaptureInfo, find_capture
from hloscope.formats.compile_record import CompileResult
from hloscope.loader.backend import detect_backend
from hloscope.loader.hlo_input import load_input
from hloscope.model.module import HloModule
from hloscope.parsers.hlo_file import looks_like_text

if TYPE_CHECKING:
    from hloscope.model.xla_memory import BufferAssignment, LiveRangeDump
    from hloscope.parsers.compile_log import CompileLog
    from hloscope.parsers.xla_memory import XlaMemoryArtifacts

@dataclass(frozen=True, eq=False)
class Program:
    """A module and where it came from (see the module docstring)."""

    module: HloModule
    source: str  # what was given: a path, "-", or "<text>" for HLO text
    log_path: Path | None = None  # a compile log the user named

    @cached_property
    def hlo_path(self) -> Path | None:
        """The HLO file the module was read from (None for standard input and text)."""
        source = self.module.source
        if not source or source.startswith("<") or "\n" in source:
            return None
        path = Path(source)
        return path if path.is_file() else None

    @property
    def dump_folder(self) -> Path | None:
        """The folder holding the HLO file, where XLA's other files of the module are."""
        return None if self.hlo_path is None else self.hlo_path.parent

    @cached_property
    def backend(self) -> str:
        """"cpu", "gpu", "tpu" or "unknown" (`backend.detect_backend`)."""
        return detect_backend(self.module)

    @cached_property
    def build(self) -> BuildFolder | None:
        """The `hloscope build` folder the HLO file belongs to, if any (read leniently)."""
        return None if self.hlo_path is None else find_build(self.hlo_path)

    @cached_property
    def given_build(self) -> BuildFolder | None:
        """The build folder the input names itself; InputError when its manifest is bad."""
        folder = self._given_folder
        return read_build(folder) if folder is not None and is_build_folder(folder) else None

    @cached_property
    def compile_record(self) -> CompileResult | None:
        """What the build recorded of compiling this module (`memory_analysis()`,
        `cost_analysis()`, the verdict): only when the module is the build's main one, the one
        its record is of; None otherwise, and when the manifest's record cannot be read."""
        build, path = self.build, self.hlo_path
        if build is None or path is None or path not in (build.dump_module, build.hlo_path):
            return None
        try:
            return build.result
        except (KeyError, TypeError):
            return None

    @cached_property
    def capture(self) -> CaptureInfo | None:
        """What `from_jax` recorded for this module, if it made it."""
        return None if self.hlo_path is None else find_capture(self.hlo_path)

    @property
    def target(self) -> str | None:
        """The target it was compiled for (`tpu:v5e:2x2`), from a build or a capture (None
        where neither names one: a build folder is read leniently, its manifest may not)."""
        if self.build is not None:
            target = self.build.manifest.get("target")
            return target if isinstance(target, str) else None
        return None if self.capture is None else self.capture.target

    @cached_property
    def xla_memory(self) -> XlaMemoryArtifacts:
        """XLA's memory files of this module (an empty bundle when there are none)."""
        from hloscope.parsers.xla_memory import XlaMemoryArtifacts, find_memory_artifacts

        if self.hlo_path is None:
            return XlaMemoryArtifacts()
        return find_memory_artifacts(self.hlo_path)

    @cached_property
    def live_range(self) -> LiveRangeDump | None:
        return self.xla_memory.read_live_range()

    @cached_property
    def buffer_assignment(self) -> BufferAssignment | None:
        return self.xla_memory.read_buffer_assignment()

    @cached_property
    def compile_log(self) -> CompileLog | None:
        """The compiler's messages, when a log or a record of the compile is known."""
        from hloscope.parsers.compile_log import parse_compile_log, read_compile_log

        build = self.given_build
        if build is not None:
            log = self.log_path or build.log_path
            texts = [build.error or ""]
            if log.exists():
                texts.append(log.read_text(errors="replace"))
            return parse_compile_log("\n".join(texts), str(log))
        if self.log_path is not None:
            return read_compile_log(self.log_path)
        return None if self.capture is None else self.capture.compile_log()

    @property
    def _given_folder(self) -> Path | None:
        if self.source == "-" or self.source.startswith("<"):
            return None
        path = Path(self.source)
        return path if path.is_dir() else None


def load_program(source: str | Path, module_name: str | None = None,
                 log_path: str | Path | None = None, lenient: bool = False) -> Program:
    """The program at `source` (anything `load_input` takes): InputError (exit 3) or ParseError
    (exit 4) as `load_input` raises them; `lenient` skips the semantic checks."""
    module = load_input(source, module_name, lenient)
    return Program(module, _label(source), None if log_path is None else Path(log_path))


def program_of(module: HloModule, log_path: str | Path | None = None) -> Program:
    """The program of an already loaded module (its side files found from `module.source`)."""
    return Program(module, module.source, None if log_path is None else Path(log_path))


def as_program(value: Program | HloModule | str | Path, module_name: str | None = None,
               log_path: str | Path | None = None, lenient: bool = False) -> Program:
    """`value` itself, the program of a module, or the program `load_program` reads."""
    if isinstance(value, Program):
        return value if log_path is None else Program(value.module, value.source, Path(log_path))
    if isinstance(value, HloModule):
        return program_of(value, log_path)
    return load_program(value, module_name, log_path, lenient)


def _label(source: str | Path) -> str:
    return "<text>" if isinstance(source, str) and looks_like_text(source) else str(source)
