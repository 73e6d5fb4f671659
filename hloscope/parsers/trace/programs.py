"""The HLO of the programs a trace ran: from `--hlo`, from the dump beside it, or embedded.

Sources, in order: the HLO the user names (an HLO text file, .gz, an XLA dump folder, or a
capture's `.xplane.pb`: its embedded programs, for a trace JSON exported from it); the dump
folder of a `hloscope profile` folder; the HloProtos of the trace's `/host:metadata` plane
(printed as HLO text by `hlo_text` and parsed like a dump). A dump folder's programs carry their
program id (the file's NNNN) on XLA:CPU and XLA:GPU; libtpu's program ids are fingerprints no
dump file carries, so those and a lone text file's programs are matched by module name.

What cannot be joined says why, with its own exit code: a trace with no XLA op at all
(`NotXlaTraceError`: TensorFlow without XLA, PyTorch), and a trace none of whose programs has
HLO at hand (`MissingHloError`, naming the programs and ids the ops ran and the HLO found).

Only programs the trace ran are loaded. `ProgramIndex.match` finds the program of an event: by
program id when both sides have one, else by module name — ambiguous when several programs
share the name (the trace JSON has no program id), which `warnings` reports.
"""
from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hloscope.errors import InputError, MissingHloError, NotXlaTraceError
from hloscope.model.module import HloModule
from hloscope.model.trace import EmbeddedModule, OpEvent, Trace
from hloscope.parsers.dump_folder import dump_files
from hloscope.parsers.hlo_file import load_file
from hloscope.parsers.text import parse_lines
from hloscope.parsers.trace.files import XPLANE_SUFFIXES
from hloscope.parsers.trace.hlo_text import module_text
from hloscope.parsers.trace.xplane import read_xplane
from hloscope.parsers.xla_memory.hlo_proto import decode_message

EMBEDDED = "the HloProto embedded in the trace"


@dataclass(slots=True)
class TraceProgram:
    """One program (HLO module) a trace ran, with where its HLO came from."""

    name: str
    program_id: int | None
    module: HloModule
    origin: str


@dataclass(slots=True)
class ProgramIndex:
    programs: list[TraceProgram] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    offered: list[str] = field(default_factory=list)  # what the HLO source held, for errors

    def match(self, event: OpEvent) -> TraceProgram | None:
        if event.program_id is not None:
            for program in self.programs:
                if program.program_id == event.program_id:
                    return program
        named = [p for p in self.programs if p.name == event.module]
        return max(named, key=lambda p: p.module.instruction_count, default=None)


def trace_programs(trace: Trace, hlo: str | Path | None = None,
                   dump: Path | None = None) -> ProgramIndex:
    """The programs of `trace` from `hlo`, else `dump`, else the embedded HloProtos.

    NotXlaTraceError when the trace holds no XLA op; MissingHloError when none of the programs
    its ops ran has HLO at hand (the message names them); a warning when only some lack it."""
    wanted = _ran(trace.events)
    if not wanted:
        raise NotXlaTraceError(not_xla_reason(trace))
    if hlo is not None:
        index = _from_user(Path(hlo), wanted)
    elif dump is not None:
        index = _from_dump(dump, wanted)
    elif trace.modules:
        index = _from_modules(trace.modules, trace.source, wanted, EMBEDDED)
    else:
        raise MissingHloError(f"{trace.source}: {_no_hlo_reason(trace)}; its ops ran "
                              f"{describe(wanted)}. {HLO_HINT}")
    index.warnings.extend(_missing(index, wanted, trace))
    index.warnings.extend(_ambiguities(index, trace))
    return index


HLO_HINT = ("Pass --hlo with the capture's .xplane.pb (its embedded programs), the XLA dump "
            "folder (XLA_FLAGS=--xla_dump_to) or the program's HLO text")


def not_xla_reason(trace: Trace) -> str:
    """Why a trace without XLA ops cannot be joined, naming what wrote it where that shows."""
    lines = ("no 'XLA Ops' line on a device plane and no event naming an XLA program "
             "(hlo_op, hlo_module, program_id)")
    if trace.frameworks:
        writer = " and ".join(trace.frameworks)
        return (f"{trace.source}: no XLA op in this capture: it is a {writer} trace ({lines}); "
                "hloscope trace reads the captures of XLA programs (jax.profiler, or "
                "TensorFlow / PyTorch-XLA with XLA on)")
    return f"{trace.source}: no XLA op in this capture ({lines}): nothing to join to HLO"


def _no_hlo_reason(trace: Trace) -> str:
    if trace.kind == "trace-json":
        return "a trace JSON carries no HLO (only the XSpace embeds the programs)"
    return "this XSpace embeds no HloProto in its /host:metadata plane"


def describe(wanted: set[tuple[int | None, str]]) -> str:
    """`jit_f (program 1219...), jit__psum (program 9646...)`: the programs a trace ran."""
    named = sorted(f"{name or '(no module name)'}"
                   f"{'' if program is None else f' (program {program})'}"
                   for program, name in wanted)
    return ", ".join(named)


def _ran(events: Iterable[OpEvent]) -> set[tuple[int | None, str]]:
    """(program id, module name) of the programs the events ran; an event in no program (a
    PjRt transfer on a raw GPU plane, a kernel of TensorFlow without XLA) names none."""
    return {(e.program_id, e.module) for e in events if e.module or e.program_id is not None}


def _from_user(path: Path, wanted: set[tuple[int | None, str]]) -> ProgramIndex:
    """`--hlo`: a dump folder, another capture's XSpace (its embedded programs) or HLO text."""
    if path.is_dir():
        return _from_dump(path, wanted)
    if path.name.endswith(XPLANE_SUFFIXES):
        modules = read_xplane(path).modules
        if not modules:
            raise MissingHloError(f"{path}: this XSpace embeds no HloProto to take the HLO from")
        return _from_modules(modules, str(path), wanted, f"the HloProto embedded in {path}")
    return _from_file(path)


def _from_file(path: Path) -> ProgramIndex:
    modules = load_file(path)
    return ProgramIndex([TraceProgram(m.name, None, m, str(path)) for m in modules],
                        offered=[m.name for m in modules])


def _from_dump(folder: Path, wanted: set[tuple[int | None, str]]) -> ProgramIndex:
    """The dump's files of the programs the trace ran: by program id (XLA:CPU and XLA:GPU
    number a dump file by it), else by module name (libtpu's program ids are fingerprints the
    dump does not carry); a file matched by name takes the trace's id when only one program
    of that name ran."""
    files = dump_files(folder)
    if not files:
        raise InputError(f"{folder}: no HLO module files (*after_optimizations.txt) here")
    ids = {program for program, _ in wanted if program is not None}
    ids_by_name: dict[str, set[int | None]] = {}
    for program, name in wanted:
        ids_by_name.setdefault(name, set()).add(program)
    by_id = [f for f in files if f.program_id in ids]
    found_ids = {f.program_id for f in by_id}
    programs = [TraceProgram(m.name, f.program_id, m, str(f.path))
                for f in by_id for m in load_file(f.path)]
    for dump in files:
        trace_ids = ids_by_name.get(dump.module_name, set()) - found_ids
        if dump in by_id or not trace_ids:
            continue
        program = next(iter(trace_ids)) if len(trace_ids) == 1 else None
        programs += [TraceProgram(m.name, program, m, str(dump.path))
                     for m in load_file(dump.path)]
    return ProgramIndex(programs, offered=[f"{f.module_name} ({f.path.name})" for f in files])


def _from_modules(modules: list[EmbeddedModule], source: str,
                  wanted: set[tuple[int | None, str]], origin_text: str) -> ProgramIndex:
    ids = {program for program, _ in wanted}
    names = {name for program, name in wanted if program is None}
    programs = []
    for embedded in modules:
        if embedded.program_id not in ids and embedded.name not in names:
            continue
        origin = f"{source} ({EMBEDDED}, program {embedded.program_id})"
        text = module_text(decode_message("xla.HloProto", embedded.hlo_proto, origin).hlo_module)
        module = parse_lines(io.StringIO(text), origin)[0]
        programs.append(TraceProgram(embedded.name, embedded.program_id, module, origin_text))
    return ProgramIndex(programs, offered=[f"{m.name} (program {m.program_id})" for m in modules])


def _missing(index: ProgramIndex, wanted: set[tuple[int | None, str]],
             trace: Trace) -> list[str]:
    """MissingHloError when no program the trace ran has its HLO; else a warning naming
    those that have none."""
    probe = ProgramIndex(index.programs)
    lacking = {(program, name) for program, name in wanted
               if probe.match(_probe(program, name)) is None}
    if lacking == wanted:
        have = ", ".join(sorted(index.offered)) or "no program"
        raise MissingHloError(
            f"{trace.source}: no program the trace ran has its HLO here: the ops ran "
            f"{describe(wanted)}; the HLO at hand holds {have}. {HLO_HINT}")
    if not lacking:
        return []
    return [f"no HLO for {describe(lacking)}: their ops are counted in the programs table "
            "but joined to no instruction"]


def _probe(program: int | None, name: str) -> OpEvent:
    return OpEvent("", name, program, None, 0, 0, "", "")


def _ambiguities(index: ProgramIndex, trace: Trace) -> list[str]:
    warnings = []
    for name in sorted({e.module for e in trace.events if e.program_id is None}):
        same = [p for p in index.programs if p.name == name]
        if len(same) > 1:
            chosen = max(same, key=lambda p: p.module.instruction_count)
            others = ", ".join(str(p.program_id) for p in same if p is not chosen)
            warnings.append(
                f"module name {name!r} is ambiguous: the trace gives no program id and "
                f"{len(same)} programs have that name; joined to program {chosen.program_id} "
                f"(the largest), not {others}")
    return warnings
