"""XLA's own C++ HLO parser (jaxlib._hlo, a private API) as a test oracle, never a dependency."""
from __future__ import annotations

import re
from dataclasses import dataclass

from jaxlib_descriptors import varint

from hloscope.model.scan import blank_block_comments
from hloscope.model.shape_text import parse_shape_prefix

_PRINTED = re.compile(r"\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*")


_ASYNC_OPCODES = {"kAsyncStart": "async-start", "kAsyncUpdate": "async-update",
                  "kAsyncDone": "async-done"}


@dataclass(frozen=True)
class OracleInstruction:
    name: str
    opcode: str
    shape_text: str


def xla_available() -> bool:
    try:
        from jaxlib import _hlo  # noqa: F401
    except Exception:
        return False
    return True


def split_modules(text: str) -> list[str]:
    """One text per `HloModule` (XLA's parser reads one module per call)."""
    starts = [m.start() for m in re.finditer(r"(?m)^HloModule\b", text)]
    if len(starts) <= 1:
        return [text]
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)], strict=True)]


def xla_parse(text: str) -> dict[str, list[OracleInstruction]]:
    """computation name -> its instructions, as XLA parses and prints them."""
    from jaxlib import _hlo

    module = _hlo.hlo_module_from_text(text)
    result: dict[str, list[OracleInstruction]] = {}
    for computation in module.computations():
        result[computation.name] = [
            _oracle_instruction(i.to_string(), i.name, i.opcode) for i in computation.instructions()
        ]
    return result


def _oracle_instruction(printed: str, name: str, opcode: object) -> OracleInstruction:
    printed = blank_block_comments(printed)
    head = _PRINTED.match(printed)
    assert head, printed
    _, end = parse_shape_prefix(printed, head.end())
    shape_text = " ".join(printed[head.end():end].split())
    opcode_name = printed[end:].split("(", 1)[0].strip()
    # XLA prints async ops by what they wrap (`custom-call-start`); the opcode is async-start.
    opcode_name = _ASYNC_OPCODES.get(str(opcode).rsplit(".", 1)[-1], opcode_name)
    return OracleInstruction(name, opcode_name, shape_text)


# Opcodes newer than the pinned XLA: replaced by a variadic one it knows, for the oracle only,
# with the attributes only the newer opcode has.
_NEWER_OPCODES = {"collective-reduce": "all-reduce"}
_NEWER_ATTRIBUTES = (", has_dynamic_root=true",)


def compare_with_xla(text: str, source: str) -> list[str]:
    """Disagreements between hloscope and XLA on every module of `text` (empty when none)."""
    from hloscope.model.shape_text import parse_shape
    from hloscope.parsers.text import parse_text

    ours = parse_text(text, source)
    texts = split_modules(text)
    assert len(texts) == len(ours), f"{len(texts)} module texts, {len(ours)} modules parsed"
    problems: list[str] = []
    for module_text, module in zip(texts, ours, strict=True):
        for newer, older in _NEWER_OPCODES.items():
            module_text = module_text.replace(f" {newer}(", f" {older}(")
        for attribute in _NEWER_ATTRIBUTES:
            module_text = module_text.replace(attribute, "")
        reference = xla_parse(module_text)
        if set(reference) != set(module.computations):
            problems.append(f"{module.name}: computations differ: "
                            f"{sorted(set(reference) ^ set(module.computations))}")
            continue
        for name, expected in reference.items():
            mine = module.computations[name].instructions
            if len(expected) != len(mine):
                problems.append(f"{name}: {len(expected)} instructions in XLA, {len(mine)} here")
                continue
            for want, got in zip(expected, mine, strict=True):
                opcode = _NEWER_OPCODES.get(got.opcode, got.opcode)
                if not _same_name(want.name, got.name) or want.opcode != opcode:
                    problems.append(f"{name}/{got.name}: {want.name} {want.opcode} vs {opcode}")
                elif not same_shape(parse_shape(want.shape_text), got.shape):
                    problems.append(f"{name}/{got.name}: {want.shape_text} vs {got.shape_text}")
    return problems


def _same_name(xla_name: str, our_name: str) -> bool:
    """XLA's parser makes names unique module-wide by renumbering their last `.N` suffix."""
    stem = re.sub(r"\.\d+$", "", our_name)
    return xla_name == our_name or re.fullmatch(re.escape(stem) + r"(\.\d+)?", xla_name) is not None


def same_shape(xla_shape, our_shape) -> bool:
    """Equal, where a shape written without a layout gets XLA's default one (descending)."""
    if xla_shape.is_tuple or our_shape.is_tuple:
        return (xla_shape.is_tuple and our_shape.is_tuple
                and len(xla_shape.tuple_shapes) == len(our_shape.tuple_shapes)
                and all(same_shape(a, b) for a, b in zip(xla_shape.tuple_shapes,
                                                         our_shape.tuple_shapes, strict=True)))
    if our_shape.layout is None:
        return xla_shape.without_layout() == our_shape.without_layout()
    return xla_shape == our_shape


def hlo_module_from_hlo_proto(hlo_proto: bytes) -> bytes:
    """The HloModuleProto (field 1) of a serialized HloProto, as a profiler trace embeds it."""
    position, found = 0, None
    while position < len(hlo_proto):
        key, position = varint(hlo_proto, position)
        if key & 7 == 2:
            size, position = varint(hlo_proto, position)
            if key >> 3 == 1:
                found = hlo_proto[position : position + size]
            position += size
        elif key & 7 == 0:
            _, position = varint(hlo_proto, position)
        else:
            raise ValueError(f"unexpected wire type {key & 7} in an HloProto")
    assert found is not None, "no hlo_module in the HloProto"
    return found


def xla_text_of_proto(hlo_module_proto: bytes) -> str:
    """XLA's own printing of a serialized HloModuleProto (this jaxlib's printer: it writes every
    get-tuple-element out, where newer printers fold them into `%tuple#i` operands)."""
    from jaxlib import _hlo

    return _hlo.HloModule.from_serialized_hlo_module_proto(hlo_module_proto).to_string()


def compare_with_xla_printing(text: str, source: str, reference_text: str) -> list[str]:
    """Disagreements between hloscope's parse of `text` (which may write get-tuple-elements as
    `%tuple#i`) and XLA's parse of `reference_text`, the same program as XLA printed it: every
    other instruction in order with its name, opcode and shape, and the get-tuple-elements of
    each computation as (tuple, index, shape), chained indices resolved to the tuple they read."""
    from hloscope.model.shape_text import parse_shape
    from hloscope.parsers.text import parse_text

    (module,) = parse_text(text, source)
    reference = xla_parse(reference_text)
    (printed,) = parse_text(reference_text, "<XLA's printing>")  # for operand lists only
    problems: list[str] = []
    if set(reference) != set(module.computations):
        return [f"computations differ: {sorted(set(reference) ^ set(module.computations))}"]
    for name, expected in reference.items():
        mine = module.computations[name].instructions
        others = [(i.name, i.opcode) for i in expected if i.opcode != "get-tuple-element"]
        our_others = [(i.name, i.opcode) for i in mine if i.opcode != "get-tuple-element"]
        if others != our_others:
            problems.append(f"{name}: the instructions other than get-tuple-element differ")
        shapes = {i.name: i.shape_text for i in expected}
        for instruction in mine:
            if instruction.opcode != "get-tuple-element" and instruction.name in shapes and \
                    not same_shape(parse_shape(shapes[instruction.name]), instruction.shape):
                problems.append(f"{name}/{instruction.name}: shapes differ")
        if sorted(_xla_elements(reference_text, name)) != sorted(_our_elements(mine)):
            problems.append(f"{name}: the get-tuple-elements differ")
        canonical = _canonical_names(printed.computations[name].instructions)
        theirs = {i.name: tuple(canonical.get(o, o) for o in i.operands)
                  for i in printed.computations[name].instructions}
        for instruction in mine:
            if instruction.opcode != "get-tuple-element" and \
                    theirs.get(instruction.name) != instruction.operands:
                problems.append(f"{name}/{instruction.name}: operands differ")
    return problems


def _canonical_names(instructions) -> dict[str, str]:
    """get-tuple-element name -> `tuple#i` (chained for nested tuples), in XLA's printing."""
    reads = {i.name: (i.operands[0], i.raw_attribute("index")) for i in instructions
             if i.opcode == "get-tuple-element"}

    def name_of(name: str) -> str:
        if name not in reads:
            return name
        base, index = reads[name]
        return f"{name_of(base)}#{index}"

    return {name: name_of(name) for name in reads}


_GTE = re.compile(r"%([\w.\-]+) = (.*?) get-tuple-element\(%([\w.\-]+)\), index=(\d+)")


def _xla_elements(reference_text: str, computation: str) -> list[tuple[str, int, str]]:
    body = reference_text.split(f"%{computation} (", 1)[-1].split("\n}\n", 1)[0]
    found = {m.group(1): (m.group(3), int(m.group(4)), m.group(2)) for m in _GTE.finditer(body)}

    def tuple_of(name: str) -> str:
        if name not in found:
            return name
        base, index, _ = found[name]
        return f"{tuple_of(base)}#{index}"

    return [(tuple_of(base), index, " ".join(shape.split()))
            for base, index, shape in found.values()]


def _our_elements(instructions) -> list[tuple[str, int, str]]:
    return [(i.operands[0], int(i.raw_attribute("index")), " ".join(i.shape_text.split()))
            for i in instructions if i.opcode == "get-tuple-element"]


BESIDE_TRACE = "vm.xplane.pb"
"""A fixture taken with `hloscope profile` keeps its trace, whose HloProto is the program's."""


def printing_beside(path) -> str | None:
    """XLA's own printing of the program of the HLO file `path` when its folder holds the trace
    of that program (text newer than this jaxlib's parser: jax 0.11's), else None."""
    from hloscope.parsers.trace import load_trace

    trace = path.parent / BESIDE_TRACE
    if not trace.exists():
        return None
    (embedded,) = load_trace(trace).modules
    return xla_text_of_proto(hlo_module_from_hlo_proto(embedded.hlo_proto))
