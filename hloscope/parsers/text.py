"""Streaming parser for HLO text as XLA prints it, one line at a time.

Statements are the module header (`HloModule name, attrs`), stack-frame table sections, computation
headers (`[ENTRY] name [(params) -> shape] {`), instructions and closing braces. A statement may
span lines: it ends when its brackets balance. Most instructions sit on one line and match one
compiled pattern (the fast path); the rest go through a bracket-aware slow path that also finds the
exact column of an error.

Accepted beyond XLA's own printer, as XLA's parser accepts them: text without an `HloModule` header
(the last computation is the entry), several modules in one file, names without `%`, `//` and
`/* */` comments, operand lists with inline shapes, and files without a trailing newline. A line
that starts `[ROOT] name =` begins a new instruction unless the statement before it is still open
(a bracket, a trailing `,` or `=`); the other forms of XLA's grammar (computations on one line,
shape-less and nested instructions, inline bodies, the async shorthand) are read by
hloscope.parsers.instructions.

Truncated text is refused precisely: the error says where the text ends and inside which
computation, or, for a module that ends after a complete computation but before its ENTRY, that the
entry computation its header declares is missing.

Text held in larger pieces (a file read in chunks, a string) goes through `feed_text`, which with
the optional C accelerator (hloscope._native) hands each run of lines the fast path would read
(one-line instructions, blank lines, plain `}` lines, one-line computation headers) to it in one
call; it stops at any other line, which `feed` then reads. The modules are the same either way.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePath

from hloscope._native import scan as native
from hloscope.errors import ParseError, SourceLocation
from hloscope.gc_pause import paused_gc
from hloscope.model.instruction import Instruction
from hloscope.model.module import Computation, HloModule
from hloscope.model.scan import (
    blank_block_comments,
    bracket_balance,
    split_top_level,
    strip_line_comment,
)
from hloscope.model.shape_text import TextSyntaxError, parse_shape
from hloscope.parsers.instructions import InstructionReader, async_shorthand
from hloscope.parsers.statement import blank, body_brace
from hloscope.parsers.tuple_index import materialize_tuple_indices, may_fold_tuple_indices

_NAME = r"%?([A-Za-z_][\w.\-]*)"
_ARRAY_SHAPE = r"[a-z][a-z0-9]*\[[^\]]*\](?:\{[^{}]*\})?"
_FAST_INSTRUCTION = re.compile(
    r"[ \t]*(ROOT[ \t]+)?" + _NAME + r"[ \t]*=[ \t]*(" + _ARRAY_SHAPE + r")[ \t]+"
    r"([a-z][a-z0-9\-]*)\(([^()\"]*)\)(?=[ \t]*(?:,|\r?\n?$))"
)
# A tuple-shaped one-line instruction: its shape (up to the `)` before the opcode) is looked up
# among the tuple shapes the careful path has already parsed; a new one takes the careful path.
_FAST_TUPLE_HEAD = re.compile(r"[ \t]*(ROOT[ \t]+)?" + _NAME + r"[ \t]*=[ \t]*(?=\()")
_TUPLE_TAIL = re.compile(
    r"\)[ \t]+([a-z][a-z0-9\-]*)\(([^()\"]*)\)(?=[ \t]*(?:,|\r?\n?$))"
)
# A line that starts `[ROOT] name =` begins a new instruction, unless the statement before it
# is still open (a bracket, or a trailing `,` or `=`).
_INSTRUCTION_START = re.compile(r"\s*(?:ROOT\s+)?%?[A-Za-z_][\w.\-]*\s*=")
_HEADER = r"\s*(ENTRY\s+)?" + _NAME + r"\s*(?:(\(.*\))\s*->\s*(.+?))?\s*"
_COMPUTATION_HEADER = re.compile(_HEADER + r"\{\s*$", re.S)
_HEADER_WITHOUT_BRACE = re.compile(_HEADER + "$", re.S)
_PARAMETER_ITEM = r"\s*%?[A-Za-z_][\w.\-]*\s*:\s*" + _ARRAY_SHAPE + r"\s*"
_ARRAY_PARAMETERS = re.compile(r"\((?:" + _PARAMETER_ITEM + r"(?:," + _PARAMETER_ITEM + r")*)?\)")
_ARRAY_PARAMETER = re.compile(r"%?([A-Za-z_][\w.\-]*)\s*:\s*(" + _ARRAY_SHAPE + ")")
_COMPUTATION_CLOSE = re.compile(r"\s*\}\s*(,.*)?$", re.S)
_EXECUTION_THREAD = re.compile(r'execution_thread\s*=\s*"([^"]*)"')
_MODULE_THEN_ENTRY = re.compile(r"(\s*HloModule\s+[^\s,]+)\s+ENTRY\s")
_MODULE_HEADER = re.compile(r"\s*HloModule\s+" + _NAME)
_SECTION_ENTRY = re.compile(r"\s*(\d+)[ \t]+(\S.*?)\s*$", re.S)
SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


class TextParser:
    """Feed it lines with `feed`, then call `finish` for the parsed modules."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.modules: list[HloModule] = []
        self.module: HloModule | None = None
        self.computation: Computation | None = None
        self.section = ""
        self.line_number = 0
        self.module_bytes = 0
        self._pending: list[str] = []
        self._pending_line = 0
        self._pending_balance = 0
        self._awaiting_brace = False  # a computation header whose `{` is on the next line
        self._root_seen = False
        self._in_block_comment = False
        self._last_line = ""
        self._intern: dict[str, str] = {}
        self._tuple_shapes: dict[str, str] = {}  # tuple shape as written -> its shape text
        self._reader = InstructionReader(self)
        self._opcodes: dict[str, str] = {}  # opcode as written -> as XLA builds it (async-done)
        self._index_mark_seen = False  # '#' and a digit: `%tuple#i` operands may need expanding
        # What the C accelerator's fast path reads (hloscope._native): the tables a shape,
        # tuple shape or opcode must be in already.
        self._native_tables = (self._intern, self._tuple_shapes, self._opcodes, source)

    # --- driving ---------------------------------------------------------------------------
    def feed(self, line: str) -> None:
        if not self._index_mark_seen and may_fold_tuple_indices(line):
            self._index_mark_seen = True
        self._feed_line(line)

    def _feed_line(self, line: str) -> None:
        self.line_number += 1
        self.module_bytes += len(line)
        self._last_line = line
        if self.computation is not None and not self._pending and not self._in_block_comment:
            match = _FAST_INSTRUCTION.match(line)
            if match is not None:
                if (line.count("{") == line.count("}") and line.count("(") == line.count(")")
                        and "//" not in line and "/*" not in line
                        and not line.rstrip().endswith(_OPEN_ENDINGS)):  # _simple_complete_line
                    self._add_fast(match, line)
                    return
            elif self._add_fast_tuple(line):
                return
        self._feed_general(line)

    def feed_text(self, text: str) -> None:
        """Feeds whole lines held in one string (a chunk of a file that ends at a line break, or
        the last one): line by line, as `feed` reads them; with the C accelerator, the runs of
        lines `feed` would read with its one-line fast paths (and blank lines, plain `}` lines
        and one-line computation headers) are read by it instead, with the same result."""
        end = len(text)
        position = 0
        if not self._index_mark_seen and may_fold_tuple_indices(text):
            self._index_mark_seen = True
        while position < end:
            if native is not None and not self._pending and not self._in_block_comment:
                stop = self._native_run(text, position)
                if stop != position:
                    position = stop
                    continue
            stop = text.find("\n", position) + 1 or end
            self._feed_line(text[position:stop])  # the whole text was checked for '#' above
            position = stop

    def _native_run(self, text: str, position: int) -> int:
        """Lines from `position` read by the C accelerator's fast_lines (it opens computations
        through _open_computation and may close the current one); returns where the next line
        for `feed` starts."""
        computation = self.computation
        if computation is None and self.section:
            return position
        first = self.line_number + 1
        stop, lines, last, root_seen, current = native.fast_lines(  # type: ignore[union-attr]
            text, position, None if computation is None else computation.instructions, first,
            self._root_seen, self._native_tables, self._open_computation)
        self.line_number = first - 1 + lines
        self._root_seen = root_seen
        if current is None:
            self.computation = None
        if lines:
            self.module_bytes += stop - position
            self._last_line = text[last:stop]
        return stop

    def _open_computation(self, line_number: int, header: tuple[bool, str, tuple[tuple[str, str],
                          ...], str]) -> list[Instruction] | None:
        """_computation_header for a header the C accelerator read whole (line `line_number`):
        the new computation's instruction list, or None (nothing done) where
        _computation_header would raise, so that `feed` reports it."""
        is_entry, name, parameters, result = header
        self.line_number = line_number
        module = self._current_module()
        if name in module.computations or (
                is_entry and module.entry_name and module.computations[module.entry_name].is_entry):
            return None
        self.section = ""
        computation = Computation(name=name, line=line_number, is_entry=is_entry,
                                  header_parameters=parameters, header_result=result)
        if is_entry:
            module.entry_name = name
        module.computations[name] = computation
        self.computation = computation
        self._root_seen = False
        return computation.instructions

    def _feed_general(self, line: str) -> None:
        if self._in_block_comment or "/*" in line:
            line = self._blank_block_comments(line)
        stripped = line.lstrip()
        if not stripped or stripped.startswith("//"):
            return
        if "//" in line:
            line = strip_line_comment(line)
            if not line.strip():
                return
        if self.computation is not None:
            self._inside_computation(line, stripped)
        elif self._pending:
            if self._awaiting_brace:
                self._awaiting_brace = False
                if stripped.rstrip() != "{" and not self._signature_follows(stripped):
                    self._not_a_header(self._pending[0], self._pending_line)
            self._extend(line)
            if self._top_level_complete():
                self._dispatch_top_level()
        else:
            self._outside_computation(line, stripped)

    def finish(self) -> list[HloModule]:
        if self._pending and (self._pending_balance > 0 or self.computation is None):
            self._truncated_statement()
        self._flush()
        if self.computation is not None:
            self._truncated_computation()
        self._close_module()
        if not self.modules:
            raise ParseError("no HLO module found: expected 'HloModule' or a computation",
                             SourceLocation(self.source, max(self.line_number, 1), 1))
        return self.modules

    def _blank_block_comments(self, line: str) -> str:
        """Blanks `/* ... */` comments, which may span lines, keeping columns unchanged."""
        out = []
        position = 0
        while position < len(line):
            if self._in_block_comment:
                end = line.find("*/", position)
                stop = len(line) if end < 0 else end + 2
                out.append(" " * (stop - position))
                self._in_block_comment = end < 0
                position = stop
            else:
                start = line.find("/*", position)
                if start < 0:
                    out.append(line[position:])
                    break
                out.append(line[position:start])
                self._in_block_comment = True
                position = start
        text = "".join(out)
        return text if not line.endswith("\n") or text.endswith("\n") else text + "\n"

    # --- statements that span lines --------------------------------------------------------
    def _start_statement(self, line: str, balance: int) -> None:
        self._pending = [line]
        self._pending_line = self.line_number
        self._pending_balance = balance

    def _extend(self, line: str) -> None:
        self._pending.append(line)
        self._pending_balance += bracket_balance(line)

    def _flush(self) -> None:
        if self._pending:
            text = "".join(self._pending)
            self._pending = []
            self._reader.statements(text, self._pending_line)

    def _top_level_complete(self) -> bool:
        if self._pending[0].lstrip().startswith("HloModule"):
            return self._pending_balance <= 0 and not self._pending[-1].rstrip().endswith(",")
        return self._pending_balance <= 1 and self._pending[-1].rstrip().endswith("{")

    def _dispatch_top_level(self) -> None:
        text = "".join(self._pending)
        self._pending = []
        if text.lstrip().startswith("HloModule"):
            self._module_header(text, self._pending_line)
        else:
            self._computation_header(text, self._pending_line)

    # --- inside a computation --------------------------------------------------------------
    def _inside_computation(self, line: str, stripped: str) -> None:
        if self._pending and (self._pending_balance > 0
                              or self._pending[-1].rstrip().endswith((",", "="))):
            self._extend(line)
        elif stripped[0] == "}":
            self._flush()
            self._close_computation(line, self.line_number)
            return
        elif match := _FAST_INSTRUCTION.match(line):
            self._flush()
            balance = bracket_balance(line)
            if balance == 0 and not line.rstrip().endswith((",", "=")):
                self._add_fast(match, line)
                return
            self._start_statement(line, balance)
        elif _INSTRUCTION_START.match(line):
            self._flush()
            self._start_statement(line, bracket_balance(line))
        elif self._pending:
            if self._awaiting_brace:
                self._awaiting_brace = False
                if stripped.rstrip() != "{":
                    self._not_a_header(self._pending[0], self._pending_line)
            self._extend(line)
        else:
            raise self._located(line, self.line_number, _first_nonblank(line),
                                "expected an instruction 'name = shape opcode(operands)'")
        if self._pending_balance < 0:  # the statement holds the computation's closing brace
            self._flush()

    def _add_fast(self, match: re.Match[str], line: str) -> None:
        root, name, shape_text, opcode = match.group(1, 2, 3, 4)
        intern = self._intern
        if shape_text not in intern:
            self._check_shape(line, match.start(3), shape_text)
            intern[shape_text] = shape_text
        self._add(root, name, intern[shape_text], opcode, match.span(5), line)

    def _add_fast_tuple(self, line: str) -> bool:
        """A one-line instruction with a tuple shape parsed before (see _FAST_TUPLE_HEAD)."""
        head = _FAST_TUPLE_HEAD.match(line)
        if head is None:
            return False
        if "/*" in line:  # `/*index=5*/` in a long tuple: blanked, as the careful path does
            line = blank_block_comments(line)
        start = head.end()
        tail = _TUPLE_TAIL.search(line, start)
        if tail is None:
            return False
        shape_text = self._tuple_shapes.get(line[start : tail.start() + 1])
        if shape_text is None or not _simple_complete_line(line[tail.start() + 1 :]):
            return False
        self._add(head.group(1), head.group(2), shape_text, tail.group(1), tail.span(2), line)
        return True

    def _add(self, root: str | None, name: str, shape_text: str, opcode: str,
             operands: tuple[int, int], line: str) -> None:
        known = self._opcodes.get(opcode)
        if known is None:
            shorthand = async_shorthand(opcode)
            if shorthand is not None and shorthand[1] == "async-start":
                self._reader.statements(line, self.line_number)  # makes a computation
                return
            known = self._opcodes[opcode] = shorthand[1] if shorthand else opcode
        opcode = known
        start, end = operands
        instruction = Instruction(name, opcode, shape_text, line, start, end, self.line_number,
                                  root is not None, self.source)
        if root is not None:
            self._append(instruction)
        else:
            self.computation.instructions.append(instruction)  # type: ignore[union-attr]

    def _check_shape(self, line: str, start: int, shape_text: str) -> None:
        """Parses each distinct shape text once, so a bad shape fails at load time."""
        try:
            parse_shape(shape_text)
        except TextSyntaxError as error:
            raise self._located(line, self.line_number, start + error.offset,
                                error.message) from None

    def _append(self, instruction: Instruction) -> None:
        computation = self.computation
        assert computation is not None
        if instruction.is_root:
            if self._root_seen:
                raise self._error(f"second ROOT in computation {computation.name}",
                                  instruction.line, 1, instruction.text)
            self._root_seen = True
        computation.instructions.append(instruction)

    def _close_computation(self, line: str, line_number: int) -> None:
        computation = self.computation
        assert computation is not None
        match = _COMPUTATION_CLOSE.match(line)
        if not match:
            raise self._located(line, line_number, _first_nonblank(line), "expected '}'")
        if match.group(1):
            thread = _EXECUTION_THREAD.search(match.group(1))
            computation.execution_thread = thread.group(1) if thread else ""
        if not computation.instructions:
            raise self._located(line, line_number, _first_nonblank(line),
                                f"computation {computation.name} has no instructions")
        self.computation = None

    # --- outside computations --------------------------------------------------------------
    def _outside_computation(self, line: str, stripped: str) -> None:
        if stripped.startswith("HloModule"):
            self.section = ""
            if entry := _MODULE_THEN_ENTRY.match(line):  # `HloModule m ENTRY e {`: XLA's
                self._module_header(line[: entry.end(1)], self.line_number)  # grammar
                rest = blank(line[: entry.end(1)]) + line[entry.end(1) :]  # ignores line breaks
                self._outside_computation(rest, rest.lstrip())
                return
            balance = bracket_balance(line)
            if balance > 0 or line.rstrip().endswith(","):
                self._start_statement(line, balance)
            else:
                self._module_header(line, self.line_number)
            return
        word = stripped.split(None, 1)[0]
        if word in SECTIONS and stripped.strip() == word:
            self.section = word
            return
        if self.section and stripped[0].isdigit():
            self._section_entry(line)
            return
        self.section = ""
        balance = bracket_balance(line)
        if balance == 1 and line.rstrip().endswith("{"):
            self._computation_header(line, self.line_number)
        elif ((brace := body_brace(line)) >= 0 and line[brace + 1 :].strip()
              and _COMPUTATION_HEADER.match(line[: brace + 1])):
            self._computation_on_one_line(line, brace)
        elif balance >= 1:
            self._start_statement(line, balance)
        elif _HEADER_WITHOUT_BRACE.match(line):
            self._start_statement(line, balance)  # its `{` on a line of its own, next
            self._awaiting_brace = True
        else:
            self._not_a_header(line, self.line_number)

    def _signature_follows(self, stripped: str) -> bool:
        """`ENTRY name` alone on its line, then `(params) -> shape {` on the next (XLA's
        sharding_remover_test): XLA's grammar ignores line breaks."""
        header = _HEADER_WITHOUT_BRACE.match(self._pending[0])
        return (len(self._pending) == 1 and header is not None and header.group(3) is None
                and stripped.startswith("(") and stripped.rstrip().endswith("{"))

    def _not_a_header(self, line: str, line_number: int) -> None:
        raise self._located(line, line_number, _first_nonblank(line),
                            "expected 'HloModule' or a computation 'name (params) -> shape {'")

    def _computation_on_one_line(self, line: str, brace: int) -> None:
        """A header followed on its line by instructions (`ENTRY e { p = ... ROOT ... }`)."""
        self._computation_header(line[: brace + 1], self.line_number)
        rest = blank(line[: brace + 1]) + line[brace + 1 :]
        self._inside_computation(rest, rest.lstrip())

    def _module_header(self, text: str, line_number: int) -> None:
        self._close_module()
        match = _MODULE_HEADER.match(text)
        if not match:
            raise self._located(text, line_number, _first_nonblank(text),
                                "expected 'HloModule <name>'")
        name_end = match.end() + (text[match.end() : match.end() + 1] == ":")  # `HloModule m:`
        rest = text[name_end:]
        if rest.strip() and not rest.lstrip().startswith(","):
            raise self._located(text, line_number, name_end + _blanks(text, name_end),
                                "expected ',' after the module name")
        self.module = HloModule(name=match.group(1), source=self.source, line=line_number,
                                header_text=text.rstrip("\n"))
        self.module_bytes = len(text)

    def _section_entry(self, line: str) -> None:
        module = self._current_module()
        match = _SECTION_ENTRY.match(line)
        if match is None:  # `1"a.py"`, a lone `7`, a superscript digit: no `<id> <value>`
            raise self._located(line, self.line_number, _first_nonblank(line),
                                f"expected '<id> <value>' in the {self.section} section")
        key, value = int(match.group(1)), match.group(2)
        tables = module.stack_frames
        from hloscope.model.attributes import key_values, unquote

        try:
            if self.section == "FileNames":
                tables.file_names[key] = unquote(value)
            elif self.section == "FunctionNames":
                tables.function_names[key] = unquote(value)
            elif self.section == "FileLocations":
                tables.file_locations[key] = key_values(value)
            else:
                tables.stack_frames[key] = key_values(value)
        except TextSyntaxError as error:
            raise self._located(line, self.line_number, match.start(2) + error.offset,
                                f"{self.section} entry: {error.message}") from None

    def _computation_header(self, text: str, line_number: int) -> None:
        match = _COMPUTATION_HEADER.match(text)
        if not match:
            raise self._located(text, line_number, _first_nonblank(text),
                                "expected a computation header 'name (params) -> shape {'")
        module = self._current_module()
        name = match.group(2)
        if name in module.computations:
            raise self._located(text, line_number, match.start(2),
                                f"computation {name} is defined twice")
        parameters = self._header_parameters(text, match, line_number)
        computation = Computation(name=name, line=line_number, is_entry=bool(match.group(1)),
                                  header_parameters=parameters,
                                  header_result=" ".join((match.group(4) or "").split()))
        if computation.is_entry:
            if module.entry_name and module.computations[module.entry_name].is_entry:
                raise self._located(text, line_number, match.start(1),
                                    "a second ENTRY computation in one module")
            module.entry_name = name
        module.computations[name] = computation
        self.computation = computation
        self._root_seen = False

    def _header_parameters(self, text: str, match: re.Match[str],
                           line_number: int) -> tuple[tuple[str, str], ...]:
        if not match.group(3):
            return ()
        start, end = match.start(3), match.end(3) - 1
        if _ARRAY_PARAMETERS.fullmatch(match.group(3)):  # no tuple, comment or string: one regex
            found = [(name, " ".join(shape.split()) if " " in shape else shape)
                     for name, shape in _ARRAY_PARAMETER.findall(match.group(3))]
            return tuple((name, self._intern.setdefault(shape, shape)) for name, shape in found)
        found = []
        try:
            for item_start, item_end in split_top_level(text, start + 1, end):
                name, colon, shape = text[item_start:item_end].partition(":")
                if not colon:
                    raise TextSyntaxError("expected 'name: shape'", item_start)
                shape = " ".join(shape.split())
                found.append((name.strip().lstrip("%"), self._intern.setdefault(shape, shape)))
        except TextSyntaxError as error:
            raise self._located(text, line_number, error.offset, error.message) from None
        return tuple(found)

    def _current_module(self) -> HloModule:
        if self.module is None:
            self.module = HloModule(name=PurePath(self.source).name.split(".")[0] or "module",
                                    source=self.source, line=self.line_number,
                                    has_header=False)
        return self.module

    def _close_module(self) -> None:
        module = self.module
        if module is None:
            return
        self.module = None
        if not module.computations:
            raise ParseError(f"module {module.name} has no computations",
                             SourceLocation(self.source, module.line, 1), module.header_text)
        if not module.entry_name or not module.computations[module.entry_name].is_entry:
            module.entry_name = next(reversed(module.computations))
            _check_unmarked_entry(module, self.line_number)
        module.byte_size = self.module_bytes
        if self._index_mark_seen:
            for computation in module.computations.values():
                materialize_tuple_indices(computation)
        self.modules.append(module)

    # --- errors ----------------------------------------------------------------------------
    def _located(self, text: str, line_number: int, offset: int, message: str) -> ParseError:
        where = f" (in computation {self.computation.name})" if self.computation else ""
        return ParseError.in_text(message + where, self.source, text, line_number, offset)

    def _error(self, message: str, line: int, column: int, line_text: str) -> ParseError:
        return ParseError(message, SourceLocation(self.source, line, column), line_text)

    def _truncated_statement(self) -> None:
        text = "".join(self._pending)
        last = self._pending[-1].rstrip("\n")
        inside = (f" inside computation {self.computation.name} (opened at line "
                  f"{self.computation.line})" if self.computation else "")
        raise self._error(
            f"unexpected end of input: the statement starting at line {self._pending_line} is "
            f"not complete{inside}; the text appears truncated",
            self.line_number, len(last) + 1, last or text.splitlines()[-1])

    def _truncated_computation(self) -> None:
        computation = self.computation
        assert computation is not None
        after = (f" after instruction {computation.instructions[-1].name}"
                 if computation.instructions else "")
        last = self._last_line.rstrip("\n")
        raise self._error(
            f"unexpected end of input: computation {computation.name} (opened at line "
            f"{computation.line}) is not closed; the text ends{after} and appears truncated",
            self.line_number, len(last) + 1, last)


def _check_unmarked_entry(module: HloModule, last_line: int) -> None:
    """Without an ENTRY, the last computation is the entry: refuse it if the header disagrees."""
    layout = module.entry_computation_layout
    if layout is None:
        return
    candidate = module.entry
    declared, actual = len(layout[0]), len(candidate.header_parameters)
    if not candidate.header_result or declared == actual:
        return
    raise ParseError(
        f"module {module.name} has no ENTRY computation: the text ends at line {last_line} after "
        f"computation {candidate.name}, which takes {actual} parameter(s) while the header's "
        f"entry_computation_layout declares {declared}; the ENTRY computation is missing and the "
        f"text appears truncated",
        SourceLocation(module.source, last_line, 1), "")


def _simple_complete_line(line: str) -> bool:
    """A one-line statement with balanced brackets and no comments (the overwhelmingly common
    case); anything else takes the careful path, which also handles strings holding brackets."""
    return (
        line.count("{") == line.count("}")
        and line.count("(") == line.count(")")
        and "//" not in line
        and "/*" not in line
        and not line.rstrip().endswith(_OPEN_ENDINGS)
    )


_OPEN_ENDINGS = (",", "=", "{", "(", "[")


def _first_nonblank(text: str) -> int:
    return len(text) - len(text.lstrip())


def _blanks(text: str, pos: int) -> int:
    return len(text[pos:]) - len(text[pos:].lstrip())


def parse_lines(lines: Iterable[str], source: str) -> list[HloModule]:
    """Parses every module in `lines` (an open text file streams without being held in memory).

    Python's cyclic collector is paused meanwhile: the parse allocates an object per instruction,
    and each automatic collection of the oldest generation would traverse every one made so far
    (what the parse builds holds no cycle that needs the collector)."""
    parser = TextParser(source)
    with paused_gc():
        try:
            for line in lines:
                parser.feed(line)
            return parser.finish()
        finally:  # breaks the parser <-> reader cycle: its tables are freed now, not later
            parser._reader = None  # type: ignore[assignment]


def parse_chunks(chunks: Iterable[str], source: str,
                 parser: TextParser | None = None) -> list[HloModule]:
    """Parses every module in `chunks`, strings that together are the text (a file read a few
    dozen kilobytes at a time streams): the same as parse_lines on the text's lines (split at
    `\\n`), read with TextParser.feed_text. `parser`, when given, is the one to use (its
    line_number then says how far a failed read got)."""
    parser = TextParser(source) if parser is None else parser
    with paused_gc():
        try:
            for text in whole_lines(chunks):
                parser.feed_text(text)
            return parser.finish()
        finally:
            parser._reader = None  # type: ignore[assignment]


def whole_lines(chunks: Iterable[str]) -> Iterable[str]:
    """The chunks regrouped to end at line breaks (the last one as the text ends)."""
    rest: list[str] = []
    for chunk in chunks:
        cut = chunk.rfind("\n") + 1
        if not cut:
            rest.append(chunk)
            continue
        yield "".join((*rest, chunk[:cut])) if rest else chunk[:cut]
        rest = [chunk[cut:]] if cut < len(chunk) else []
    if rest:
        yield "".join(rest)


def parse_text(text: str, source: str = "<text>") -> list[HloModule]:
    return parse_lines(text.splitlines(keepends=True), source)

