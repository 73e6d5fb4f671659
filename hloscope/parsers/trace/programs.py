"""The HLO of the programs a trace ran: from `--hlo`, from the dump beside it, or embedded.

Sources, in order: the HLO the user names (an HLO text file, .gz, or an XLA dump folder); the
dump folder of a `hloscope profile` folder; the HloProtos of the trace's `/host:metadata` plane
(printed as HLO text by `hlo_text` and parsed like a dump). A dump folder's programs carry their
program id (the file's NNNN); a lone text file's do not, so they are matched by module name.

Only programs the trace ran are loaded. `ProgramIndex.match` finds the program of an event: by
program id when both sides have one, else by module name — ambiguous when several programs
share the name (the trace JSON has no program id), which `warnings` reports.
"""
from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hloscope.errors import InputError
from hloscope.model.module import HloModule
from hloscope.model.trace import OpEvent, Trace
from hloscope.parsers.dump_folder import dump_files
from hloscope.parsers.hlo_file import load_file
from hloscope.parsers.text import parse_lines
from hloscope.parsers.trace.hlo_text import module_text
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

    def match(self, event: OpEvent) -> TraceProgram | None:
        if event.program_id is not None:
            for program in self.programs:
                if program.program_id == event.program_id:
                    return program
        named = [p for p in self.programs if p.name == event.module]
        return max(named, key=lambda p: p.module.instruction_count, default=None)


def trace_programs(trace: Trace, hlo: str | Path | None = None,
                   dump: Path | None = None) -> ProgramIndex:
    """The programs of `trace` from `hlo`, else `dump`, else the embedded HloProtos."""
    wanted = _ran(trace.events)
    if hlo is not None:
        path = Path(hlo)
        index = _from_dump(path, wanted) if path.is_dir() else _from_file(path)
    elif dump is not None:
        index = _from_dump(dump, wanted)
    elif trace.modules:
        index = _from_embedded(trace, wanted)
    else:
        raise InputError(f"{trace.source}: this trace carries no HLO (the trace JSON never "
                         "does): pass --hlo with the HLO text or the XLA dump folder")
    index.warnings.extend(_ambiguities(index, trace))
    return index


def _ran(events: Iterable[OpEvent]) -> set[tuple[int | None, str]]:
    return {(e.program_id, e.module) for e in events}


def _from_file(path: Path) -> ProgramIndex:
    modules = load_file(path)
    return ProgramIndex([TraceProgram(m.name, None, m, str(path)) for m in modules])


def _from_dump(folder: Path, wanted: set[tuple[int | None, str]]) -> ProgramIndex:
    files = dump_files(folder)
    if not files:
        raise InputError(f"{folder}: no HLO module files (*after_optimizations.txt) here")
    ids = {program for program, _ in wanted if program is not None}
    names = {name for _, name in wanted}
    chosen = [f for f in files if f.program_id in ids or (not ids and f.module_name in names)]
    programs = []
    for dump in chosen:
        for module in load_file(dump.path):
            programs.append(TraceProgram(module.name, dump.program_id, module, str(dump.path)))
    return ProgramIndex(programs)


def _from_embedded(trace: Trace, wanted: set[tuple[int | None, str]]) -> ProgramIndex:
    ids = {program for program, _ in wanted}
    programs = []
    for embedded in trace.modules:
        if embedded.program_id not in ids:
            continue
        source = f"{trace.source} ({EMBEDDED}, program {embedded.program_id})"
        text = module_text(decode_message("xla.HloProto", embedded.hlo_proto, source).hlo_module)
        module = parse_lines(io.StringIO(text), source)[0]
        programs.append(TraceProgram(embedded.name, embedded.program_id, module, EMBEDDED))
    return ProgramIndex(programs)


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
