"""Computations and modules: the containers the text parser fills and every analysis reads.

A computation keeps its instructions in text order, which in a scheduled module
(`is_scheduled=true`) is the schedule. The module keeps its header attributes verbatim and parses
them on demand, and the stack-frame tables newer XLA prints after the header (FileNames,
FunctionNames, FileLocations, StackFrames) so that `stack_frame_id` resolves to a file and line.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from hloscope.errors import ParseError
from hloscope.model import attributes as attr
from hloscope.model.instruction import Instruction
from hloscope.model.scan import blank_block_comments, split_top_level
from hloscope.model.shape import Shape
from hloscope.model.shape_text import TextSyntaxError, parse_shape, parse_shape_prefix


@dataclass(slots=True)
class Computation:
    """A named list of instructions; the header gives `(p: shape, ...) -> shape`."""

    name: str
    line: int
    is_entry: bool = False
    header_parameters: tuple[tuple[str, str], ...] = ()
    header_result: str = ""
    execution_thread: str = ""
    instructions: list[Instruction] = field(default_factory=list)

    @property
    def root(self) -> Instruction:
        for instruction in reversed(self.instructions):
            if instruction.is_root:
                return instruction
        return self.instructions[-1]

    @property
    def parameters(self) -> list[Instruction]:
        found = [i for i in self.instructions if i.opcode == "parameter"]
        return sorted(found, key=lambda i: i.parameter_number)

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self.instructions)

    def __len__(self) -> int:
        return len(self.instructions)


@dataclass(frozen=True, slots=True)
class SourceFrame:
    """One resolved frame of an XLA stack-frame table."""

    file_name: str
    function_name: str
    line: int
    column: int
    parent_frame_id: int


@dataclass(slots=True)
class StackFrameTables:
    """The FileNames / FunctionNames / FileLocations / StackFrames sections of a module."""

    file_names: dict[int, str] = field(default_factory=dict)
    function_names: dict[int, str] = field(default_factory=dict)
    file_locations: dict[int, dict[str, str]] = field(default_factory=dict)
    stack_frames: dict[int, dict[str, str]] = field(default_factory=dict)

    def frame(self, frame_id: int) -> SourceFrame | None:
        frame = self.stack_frames.get(frame_id)
        if frame is None:
            return None
        location = self.file_locations.get(_int(frame.get("file_location_id")), {})
        return SourceFrame(
            file_name=self.file_names.get(_int(location.get("file_name_id")), ""),
            function_name=self.function_names.get(_int(location.get("function_name_id")), ""),
            line=_int(location.get("line")),
            column=_int(location.get("column")),
            # XLA 0.10.2 prints the parent's id plus one (a root frame, parent 0, prints 1).
            parent_frame_id=max(_int(frame.get("parent_frame_id")) - 1, 0),
        )


def _int(text: str | None) -> int:
    """A table's number; 0 (no such entry) for one that is missing or not a number."""
    try:
        return int(text) if text else 0
    except ValueError:
        return 0


@dataclass(slots=True)
class HloModule:
    """A parsed HLO module; `entry` is the ENTRY computation, else the last computation."""

    name: str
    source: str
    line: int
    header_text: str = ""
    computations: dict[str, Computation] = field(default_factory=dict)
    entry_name: str = ""
    stack_frames: StackFrameTables = field(default_factory=StackFrameTables)
    has_header: bool = True
    byte_size: int = 0
    alternatives: tuple[str, ...] = ()
    chosen_because: str = ""  # why the loader read this module of several (a dump folder)
    _header_spans: dict[str, tuple[int, int]] | None = None

    # --- structure -------------------------------------------------------------------------
    @property
    def entry(self) -> Computation:
        return self.computations[self.entry_name]

    def computation(self, name: str) -> Computation:
        try:
            return self.computations[name.lstrip("%")]
        except KeyError:
            raise KeyError(f"no computation named {name!r} in module {self.name}") from None

    @property
    def instruction_count(self) -> int:
        return sum(len(c.instructions) for c in self.computations.values())

    def instructions(self) -> Iterator[tuple[Computation, Instruction]]:
        for computation in self.computations.values():
            for instruction in computation.instructions:
                yield computation, instruction

    def source_location(self, instruction: Instruction) -> tuple[str, int]:
        """(file, line) an instruction comes from: its metadata, else its stack frame."""
        metadata = instruction.metadata
        if metadata.source_file:
            return metadata.source_file, metadata.source_line
        frame = self.stack_frames.frame(metadata.stack_frame_id)
        return (frame.file_name, frame.line) if frame else ("", 0)

    # --- header attributes -----------------------------------------------------------------
    def raw_attribute(self, key: str) -> str | None:
        span = self._spans().get(key)
        return None if span is None else self.header_text[span[0] : span[1]]

    def _spans(self) -> dict[str, tuple[int, int]]:
        if self._header_spans is None:
            self._header_spans = self._split_header()
        return self._header_spans

    def _split_header(self) -> dict[str, tuple[int, int]]:
        comma = self.header_text.find(",")
        if comma < 0:
            return {}
        try:
            return attr.split_attributes(self.header_text, comma + 1)
        except TextSyntaxError as error:
            raise self._header_error(error.message, error.offset) from None

    def _header_error(self, message: str, offset: int) -> ParseError:
        return ParseError.in_text(f"module header: {message}", self.source, self.header_text,
                                  self.line, offset)

    @property
    def is_scheduled(self) -> bool:
        return (self.raw_attribute("is_scheduled") or "").strip() == "true"

    @property
    def num_partitions(self) -> int:
        return self._header_integer("num_partitions")

    @property
    def replica_count(self) -> int:
        return self._header_integer("replica_count")

    def _header_integer(self, key: str, default: int = 1) -> int:
        """An integer header attribute (XLA's parser refuses any other value), else `default`."""
        raw = self.raw_attribute(key)
        if raw is None:
            return default
        if not _INTEGER.fullmatch(raw.strip()):
            raise self._header_error(f"{key}: expected an integer, got '{raw.strip()}'",
                                     self._spans()[key][0])
        return int(raw)

    @property
    def entry_computation_layout(self) -> tuple[tuple[Shape, ...], Shape] | None:
        """(parameter shapes, result shape) from `entry_computation_layout={(...)->...}`."""
        raw = self.raw_attribute("entry_computation_layout")
        if raw is None:
            return None
        span = self._spans()["entry_computation_layout"]
        try:
            return _program_shape(raw.strip()[1:-1])
        except TextSyntaxError as error:
            raise self._header_error(f"entry_computation_layout: {error.message}",
                                     span[0] + 1 + error.offset) from None

    @property
    def input_output_alias(self) -> tuple[tuple[tuple[int, ...], int, tuple[int, ...], str], ...]:
        """(output index, parameter number, parameter index, kind) for each aliased output."""
        raw = self.raw_attribute("input_output_alias")
        if not raw:
            return ()
        return tuple(_alias_entries(raw))

_INTEGER = re.compile(r"[+-]?\d+")
_ALIAS = re.compile(r"(\{[^}]*\})\s*:\s*\(\s*(\d+)\s*,\s*(\{[^}]*\})\s*(?:,\s*([\w-]+))?\s*\)")


def _alias_entries(raw: str) -> list[tuple[tuple[int, ...], int, tuple[int, ...], str]]:
    return [
        (attr.int_list(m.group(1)), int(m.group(2)), attr.int_list(m.group(3)),
         m.group(4) or "may-alias")
        for m in _ALIAS.finditer(raw.strip()[1:-1])
    ]


def _program_shape(text: str) -> tuple[tuple[Shape, ...], Shape]:
    """`(shape, shape)->shape` -> ((shapes...), result)."""
    text = blank_block_comments(text)
    arrow = _top_level_arrow(text)
    params_text, result_text = text[:arrow].strip(), text[arrow + 2 :]
    if not (params_text.startswith("(") and params_text.endswith(")")):
        raise TextSyntaxError("expected '(parameters)->result'", 0)
    inner_start = text.index("(") + 1
    params = []
    for start, end in split_top_level(text, inner_start, text.rindex(")", 0, arrow)):
        shape, _ = parse_shape_prefix(text[:end], start)
        params.append(shape)
    return tuple(params), parse_shape(result_text)


def _top_level_arrow(text: str) -> int:
    depth = 0
    for i, char in enumerate(text):
        if char in "({[":
            depth += 1
        elif char in ")}]":
            depth -= 1
        elif char == "-" and depth == 0 and text.startswith("->", i):
            return i
    raise TextSyntaxError("expected '->' in program shape", 0)
