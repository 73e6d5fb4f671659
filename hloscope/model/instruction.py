"""One HLO instruction, read lazily from the text it was parsed from.

The text parser stores the instruction's statement verbatim with the offsets of its operand list and
attributes; shapes, operands and attributes are parsed the first time an analysis asks for them.
That keeps loading a multi-hundred-MB module fast and small, while every accessor still reports a
malformed value as a ParseError at its file:line:col.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from hloscope._native import scan as native
from hloscope.errors import ParseError, SourceLocation
from hloscope.model import attributes as attr
from hloscope.model.scan import blank_block_comments, split_top_level
from hloscope.model.shape_text import TextSyntaxError, parse_shape

if TYPE_CHECKING:
    from hloscope.model.shape import Shape

# Attributes whose value names called computations.
CALLED_COMPUTATION_KEYS = (
    "calls", "to_apply", "body", "condition", "branch_computations",
    "true_computation", "false_computation", "select", "scatter", "called_computations",
)
_CALLED_KEY = re.compile("(?:" + "|".join(CALLED_COMPUTATION_KEYS) + ")=")


@dataclass(frozen=True, slots=True)
class Metadata:
    """`metadata={...}`: where an instruction comes from in the source program."""

    op_type: str = ""
    op_name: str = ""
    source_file: str = ""
    source_line: int = 0
    stack_frame_id: int = 0
    extra: tuple[tuple[str, str], ...] = ()

    @staticmethod
    def from_items(items: dict[str, str]) -> Metadata:
        known = {"op_type", "op_name", "source_file", "source_line", "stack_frame_id"}
        return Metadata(
            op_type=items.get("op_type", ""),
            op_name=items.get("op_name", ""),
            source_file=items.get("source_file", ""),
            source_line=_int_or_zero(items.get("source_line")),
            stack_frame_id=_int_or_zero(items.get("stack_frame_id")),
            extra=tuple((k, v) for k, v in items.items() if k not in known),
        )


def _int_or_zero(text: str | None) -> int:
    try:
        return int(text) if text else 0
    except ValueError:
        return 0


EMPTY_METADATA = Metadata()


@lru_cache(maxsize=2048)
def _metadata(value: str) -> Metadata:
    """`metadata={...}` read once per distinct text: instructions of one source line, or of one
    layer's copies, share it (a Metadata is immutable). The cache is kept small: validating a
    50 MB module converts every instruction's metadata, and what it holds counts in the load's
    peak memory (benchmarks/parse_speed.py)."""
    items = attr.key_values(value)
    return Metadata.from_items(items) if items else EMPTY_METADATA


class Instruction:
    """`[ROOT] name = shape opcode(operands), attributes` — see the module docstring."""

    __slots__ = (
        "name", "opcode", "shape_text", "text", "operands_start", "operands_end",
        "line", "is_root", "source", "_attributes",
    )

    def __init__(self, name: str, opcode: str, shape_text: str, text: str,
                 operands_start: int, operands_end: int, line: int, is_root: bool,
                 source: str) -> None:
        self.name = name
        self.opcode = opcode
        self.shape_text = shape_text
        self.text = text
        self.operands_start = operands_start
        self.operands_end = operands_end
        self.line = line
        self.is_root = is_root
        self.source = source
        self._attributes: dict[str, tuple[int, int]] | None = None

    def __repr__(self) -> str:
        return f"<Instruction {self.name} = {self.shape_text} {self.opcode}>"

    # --- locations -------------------------------------------------------------------------
    def location(self, offset: int) -> SourceLocation:
        """file:line:col of an offset into this instruction's statement text."""
        newlines = self.text.count("\n", 0, offset)
        line_start = self.text.rfind("\n", 0, offset) + 1
        return SourceLocation(self.source, self.line + newlines, offset - line_start + 1)

    def error(self, message: str, offset: int) -> ParseError:
        return ParseError.in_text(f"{message} (in instruction {self.name})", self.source,
                                  self.text, self.line, offset)

    # --- shape and operands ----------------------------------------------------------------
    @property
    def shape(self) -> Shape:
        try:
            return parse_shape(self.shape_text)
        except TextSyntaxError as error:
            raise self.error(error.message, self.text.find(self.shape_text) + error.offset) \
                from None

    @property
    def operand_text(self) -> str:
        return self.text[self.operands_start : self.operands_end]

    @property
    def operands(self) -> tuple[str, ...]:
        """Names of the operand instructions (none for parameter, constant, iota, ...)."""
        if self.opcode in ("parameter", "constant"):
            return ()
        if native is not None:
            names = native.plain_operands(self.text, self.operands_start, self.operands_end)
            if names is not None:
                return names
        plain = self.text[self.operands_start : self.operands_end]
        if _PLAIN_OPERANDS.fullmatch(plain):  # `%a, %b`: no shapes, comments or strings
            return tuple(_LAST_WORD_OF_ITEM.findall(plain))
        text = blank_block_comments(self.text)
        try:
            spans = split_top_level(text, self.operands_start, self.operands_end)
        except TextSyntaxError as error:
            raise self.error(error.message, error.offset) from None
        return tuple(_operand_name(text[s:e].split()[-1]) for s, e in spans if text[s:e].strip())

    @property
    def parameter_number(self) -> int:
        try:
            return int(self.operand_text)
        except ValueError:
            raise self.error("expected a parameter number", self.operands_start) from None

    # --- attributes ------------------------------------------------------------------------
    @property
    def attribute_names(self) -> tuple[str, ...]:
        return tuple(self._attribute_spans())

    def raw_attribute(self, key: str) -> str | None:
        span = self._attribute_spans().get(key)
        return None if span is None else self.text[span[0] : span[1]]

    def _attribute_spans(self) -> dict[str, tuple[int, int]]:
        if self._attributes is None:
            self._attributes = self._split_attributes()
        return self._attributes

    def _split_attributes(self) -> dict[str, tuple[int, int]]:
        spans = self._read_attribute_spans()
        return _with_mesh_device_ids(self.text, spans) if "device_ids" in spans else spans

    def _read_attribute_spans(self) -> dict[str, tuple[int, int]]:
        start = self.operands_end + 1
        if native is not None:  # the same spans for the lists it reads; None: read them here
            spans = native.attribute_spans(self.text, start)
            if spans is not None:
                return spans
        rest = self.text[start:]
        if not rest.strip():
            return {}
        comma = start + len(rest) - len(rest.lstrip())
        if self.text[comma] != ",":
            raise self.error("expected ',' before an attribute", comma)
        try:
            return attr.split_attributes(self.text, comma + 1)
        except TextSyntaxError as error:
            raise self.error(error.message, error.offset) from None

    def _typed(self, key: str, convert: Any, default: Any = None) -> Any:
        span = self._attribute_spans().get(key)
        if span is None:
            return default
        try:
            return convert(self.text[span[0] : span[1]])
        except TextSyntaxError as error:
            raise self.error(f"attribute {key}: {error.message}", span[0] + error.offset) \
                from None

    def int_list_attribute(self, key: str) -> tuple[int, ...] | None:
        return self._typed(key, attr.int_list)

    @property
    def dimensions(self) -> tuple[int, ...] | None:
        return self.int_list_attribute("dimensions")

    @property
    def lhs_contracting_dims(self) -> tuple[int, ...]:
        return self._typed("lhs_contracting_dims", attr.int_list, ())

    @property
    def rhs_contracting_dims(self) -> tuple[int, ...]:
        return self._typed("rhs_contracting_dims", attr.int_list, ())

    @property
    def lhs_batch_dims(self) -> tuple[int, ...]:
        return self._typed("lhs_batch_dims", attr.int_list, ())

    @property
    def rhs_batch_dims(self) -> tuple[int, ...]:
        return self._typed("rhs_batch_dims", attr.int_list, ())

    @property
    def window(self) -> tuple[attr.WindowDimension, ...]:
        return self._typed("window", attr.window, ())

    @property
    def dim_labels(self) -> attr.ConvolutionDimensions | None:
        return self._typed("dim_labels", attr.dim_labels)

    @property
    def feature_group_count(self) -> int:
        return self._typed("feature_group_count", attr.integer, 1)

    @property
    def batch_group_count(self) -> int:
        return self._typed("batch_group_count", attr.integer, 1)

    @property
    def tuple_index(self) -> int | None:
        return self._typed("index", attr.integer)

    @property
    def fusion_kind(self) -> str | None:
        return self.raw_attribute("kind")

    @property
    def custom_call_target(self) -> str | None:
        return self._typed("custom_call_target", attr.unquote)

    @property
    def called_computations(self) -> tuple[str, ...]:
        if _CALLED_KEY.search(self.text, self.operands_end) is None:
            return ()  # no attribute names a computation: skip parsing the attributes
        spans = self._attribute_spans()
        names: list[str] = []
        for key in CALLED_COMPUTATION_KEYS:
            span = spans.get(key)
            if span is not None:
                names.extend(attr.computation_names(self.text[span[0] : span[1]]))
        return tuple(names)

    def called_computation(self, key: str) -> str | None:
        names = self._typed(key, attr.computation_names, ())
        return names[0] if names else None

    def required_called_computation(self, key: str) -> str:
        """The computation `key=` names; a located ParseError when the attribute is missing."""
        name = self.called_computation(key)
        if name is None:
            raise self.error(f"{self.opcode} without '{key}='", self.operands_end)
        return name

    @property
    def control_predecessors(self) -> tuple[str, ...]:
        return self._typed("control-predecessors", attr.computation_names, ())

    @property
    def sharding(self) -> str | None:
        return self.raw_attribute("sharding")

    @property
    def backend_config(self) -> dict | list | str | None:
        return self._typed("backend_config", attr.backend_config)

    @property
    def frontend_attributes(self) -> dict[str, str]:
        return self._typed("frontend_attributes", attr.key_values, {})

    @property
    def metadata(self) -> Metadata:
        return self._typed("metadata", _metadata, EMPTY_METADATA)

    def convert_typed_attributes(self) -> dict[str, tuple[int, int]]:
        """Converts every typed attribute (TYPED_CONVERTERS) in the text's order, each as its
        accessor converts it: the first malformed one raises the accessor's located error.
        Returns the attribute spans; a split made for this is not kept (validating every
        instruction keeps the loaded module's memory)."""
        spans = self._attributes
        if spans is None:
            spans = self._split_attributes()
        text = self.text
        for key, (start, end) in spans.items():
            convert = TYPED_CONVERTERS.get(key)
            if convert is not None:
                try:
                    convert(text[start:end])
                except TextSyntaxError as error:
                    raise self.error(f"attribute {key}: {error.message}", start + error.offset) \
                        from None
        return spans

    @property
    def op_name(self) -> str:
        """metadata's op_name, read without parsing the other attributes (hot in analyses)."""
        text = self.text
        if text.find('op_name="', self.operands_end) < 0:
            return ""
        start = text.find("metadata={", self.operands_end)
        match = _METADATA_OP_NAME.match(text, start) if start > 0 else None
        if (match is not None and text[start - 1] in ", \t\n"
                and _at_top_level(text, self.operands_end + 1, start)):
            value = match.group(1)
            return attr.unquote(f'"{value}"') if "\\" in value else value
        return self.metadata.op_name


# The typed attributes and their converters, as the accessors above apply them.
TYPED_CONVERTERS: dict[str, Any] = {
    "dimensions": attr.int_list,
    "lhs_contracting_dims": attr.int_list,
    "rhs_contracting_dims": attr.int_list,
    "lhs_batch_dims": attr.int_list,
    "rhs_batch_dims": attr.int_list,
    "window": attr.window,
    "dim_labels": attr.dim_labels,
    "feature_group_count": attr.integer,
    "batch_group_count": attr.integer,
    "metadata": _metadata,
    "frontend_attributes": attr.key_values,
    "backend_config": attr.backend_config,
    "control-predecessors": attr.computation_names,
}

if native is not None:  # the C accelerator makes and reads Instructions through their slots
    native.configure(Instruction, tuple(Instruction.__dict__[slot]
                                        for slot in Instruction.__slots__))

# `metadata={[op_type="..." ]op_name="..."`, XLA's printing order.
_METADATA_OP_NAME = re.compile(
    r'metadata=\{\s*(?:op_type="[^"\\]*(?:\\.[^"\\]*)*"\s*)?op_name="([^"\\]*(?:\\.[^"\\]*)*)"')
def _operand_name(item: str) -> str:
    """The name ending an operand item, past a shape written without a space before it
    (`f32[4,2]{1,0}%p`, which XLA's lexer reads as two tokens)."""
    return item[max(item.rfind("]"), item.rfind("}"), item.rfind(")")) + 1 :].lstrip("%")


_PLAIN_OPERANDS = re.compile(r'[^\[\]{}()"/]*')
_LAST_WORD_OF_ITEM = re.compile(r"%?([^\s,%]+)\s*(?:,|$)")


def _with_mesh_device_ids(text: str, spans: dict[str, tuple[int, int]]
                          ) -> dict[str, tuple[int, int]]:
    """XLA's mesh replica groups with a device order, `replica_groups=mesh['x'=4,'y'=2],
    device_ids=([2,4]T(1,0)) {'x'}`, hold a top-level comma: the `device_ids=` part that follows
    `replica_groups=mesh[...]` is part of its value (anywhere else it stays an attribute of its
    own, which the checks refuse)."""
    groups = spans.get("replica_groups")
    devices = spans["device_ids"]
    if groups is None or not text.startswith("mesh[", groups[0]):
        return spans
    between = text[groups[1] : devices[0]]
    if not _DEVICE_IDS_AFTER_MESH.fullmatch(between):
        return spans
    merged = {key: span for key, span in spans.items() if key != "device_ids"}
    merged["replica_groups"] = (groups[0], devices[1])
    return merged


_DEVICE_IDS_AFTER_MESH = re.compile(r"\s*,\s*device_ids\s*=\s*")


def _at_top_level(text: str, start: int, end: int) -> bool:
    """True when text[start:end] (the attributes before a match) closes every bracket and string
    it opens, so the match is an attribute of its own (checked cheaply, without a full scan)."""
    between = text[start:end]
    return ("\\" not in between and between.count('"') % 2 == 0
            and between.count("{") == between.count("}")
            and between.count("(") == between.count(")")
            and between.count("[") == between.count("]"))
