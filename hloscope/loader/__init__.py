"""The loader: HLO input read into an `HloModule`, and a `Program` of it with every side file.

    hlo_input.py   load_input / load_all: files, .gz, dump and build folders, stdin, text
    program.py     Program, load_program, as_program: the module plus what lies beside it
    backend.py     detect_backend: which backend compiled a module
    build.py       load_build: a build folder with its HLO, memory-report total and log
    trace.py       load_traced: a profiler trace and the HLO of the programs it ran; xprof's
                   peak heap of one of them

Discovery of side files happens here and nowhere else; the names of the files hloscope writes
come from `hloscope.formats`, the readers of XLA's files from `hloscope.parsers`.
"""
from __future__ import annotations

from hloscope.loader.backend import UNKNOWN_BACKEND, detect_backend
from hloscope.loader.build import LoadedBuild, load_build
from hloscope.loader.hlo_input import hlo_folder, load_all, load_dump_folder, load_input
from hloscope.loader.program import Program, as_program, load_program, program_of

__all__ = ["UNKNOWN_BACKEND", "LoadedBuild", "Program", "as_program", "detect_backend",
           "hlo_folder", "load_all", "load_build", "load_dump_folder", "load_input",
           "load_program", "program_of"]
