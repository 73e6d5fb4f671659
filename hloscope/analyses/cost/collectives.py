"""Collectives, and whether each crosses TPU slices (DCN) or stays inside one (ICI).

Each collective's participants come from its own attributes as XLA defines them (replica-group
mode from `channel_id` and `use_global_device_ids`; explicit or iota groups expanded by
`hloscope.model.replica_groups`), mapped through the compiled device assignment to each device's
`slice_index`: a group spanning two or more slices runs over DCN, else ICI. libtpu compiles a
multislice program per slice, so its cross-slice traffic is megascale `send` / `recv` pairs
(one row per `_xla_host_transfer_rendezvous`; slices from `_xla_megascale_target`). Bytes are
the collective payload per device (`hloscope.analyses.cost.rules`) with loop trip counts applied.
The rules and libtpu's measured multislice form: see docs/targets.md, 'Collectives: ICI or DCN'.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from hloscope.analyses.cost import CostAnalysis, CostOptions
from hloscope.analyses.cost.attribution import charges
from hloscope.model.instruction import Instruction
from hloscope.model.module import HloModule
from hloscope.model.replica_groups import parse_nested_ints, parse_replica_groups
from hloscope.model.shape_text import TextSyntaxError

COLLECTIVE_OPCODES = frozenset({
    "all-reduce", "all-reduce-start", "all-gather", "all-gather-start", "reduce-scatter",
    "all-to-all", "ragged-all-to-all", "collective-permute", "collective-permute-start",
    "collective-broadcast",
})
_HAS_GLOBAL_IDS = frozenset({"all-reduce", "all-reduce-start", "all-gather", "all-gather-start",
                             "reduce-scatter"})
_PERMUTES = frozenset({"collective-permute", "collective-permute-start"})
_TRANSFER_TYPE = "_xla_megascale_transfer_type"
_RENDEZVOUS = "_xla_host_transfer_rendezvous"
_TARGET = "_xla_megascale_target"
_COMPACT_TARGET = re.compile(r"\{(\d+(?:,\d+)*)\}x\{(\d+)(?::(\d+))?\}")
DCN, ICI, UNKNOWN = "dcn", "ici", "unknown"
MEGASCALE = "megascale"


@dataclass(frozen=True)
class CollectiveRow:
    """One collective instruction: its payload, its groups and the link it runs over."""

    computation: str
    instruction: str
    opcode: str
    op_name: str
    bytes: int  # payload per device, trip counts applied
    mode: str  # cross_replica, cross_partition, cross_replica_and_partition, flattened_id,
    #            or megascale (a DCN transfer of a multislice program: opcode is its type)
    groups: int
    group_size: int
    slices_spanned: int | None  # the most slices one group spans; None without slice indices

    @property
    def crosses_slices(self) -> bool | None:
        return None if self.slices_spanned is None else self.slices_spanned > 1

    @property
    def link(self) -> str:
        crosses = self.crosses_slices
        return UNKNOWN if crosses is None else DCN if crosses else ICI

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "crosses_slices": self.crosses_slices, "link": self.link}


@dataclass
class CollectivesResult:
    """Every collective of a program, with totals per link (bytes per device per step)."""

    num_slices: int | None
    rows: list[CollectiveRow] = field(default_factory=list)

    def bytes_over(self, link: str) -> int:
        return sum(row.bytes for row in self.rows if row.link == link)

    @property
    def dcn_bytes(self) -> int:
        return self.bytes_over(DCN)

    @property
    def ici_bytes(self) -> int:
        return self.bytes_over(ICI)

    @property
    def unknown_bytes(self) -> int:
        return self.bytes_over(UNKNOWN)

    def to_dict(self) -> dict[str, Any]:
        return {"num_slices": self.num_slices, "dcn_collective_bytes": self.dcn_bytes,
                "ici_collective_bytes": self.ici_bytes,
                "unknown_link_collective_bytes": self.unknown_bytes,
                "collectives": [row.to_dict() for row in self.rows]}


def collectives(module: HloModule, slice_of: Sequence[int] | None,
                analysis: CostAnalysis | None = None,
                slice_of_id: Mapping[int, int] | None = None) -> CollectivesResult:
    """The collectives of `module`; `slice_of[i]` is the slice of logical device i (the build's
    device assignment), None when unknown (then every XLA collective's link is "unknown");
    `slice_of_id` maps device ids to slices, for megascale targets that name device ids."""
    analysis = analysis or CostAnalysis(module, CostOptions())
    payload: dict[tuple[str, str], int] = {}
    found: dict[tuple[str, str], Instruction] = {}
    transfers: dict[str, dict[str, int]] = {}
    for charge in charges(analysis):
        instruction = charge.instruction
        if instruction.opcode in COLLECTIVE_OPCODES:
            key = (charge.computation, instruction.name)
            payload[key] = payload.get(key, 0) + charge.cost.collective_bytes
            found.setdefault(key, instruction)
        elif instruction.opcode in ("send", "recv") and _megascale_type(instruction):
            sides = transfers.setdefault(_rendezvous(instruction), {})
            sides[instruction.opcode] = sides.get(instruction.opcode, 0) + \
                charge.cost.collective_bytes
            found.setdefault(("", _rendezvous(instruction)), instruction)
    slices = None if slice_of is None else len(set(slice_of))
    local = _slice_local(module, slice_of)
    rows = [_row(key, found[key], total, module, None if local else slice_of)
            for key, total in payload.items()]
    if local:
        rows = [replace(row, slices_spanned=1) for row in rows]
    rows += [_transfer_row(found[("", name)], name, sides, slices, slice_of_id)
             for name, sides in transfers.items()]
    return CollectivesResult(slices, rows)


def _slice_local(module: HloModule, slice_of: Sequence[int] | None) -> bool:
    """True for the per-slice program of a multislice compile: its participants are one
    slice's devices (slices x replicas x partitions = every recorded device)."""
    if slice_of is None:
        return False
    slices = len(set(slice_of))
    return slices > 1 and slices * module.replica_count * module.num_partitions == len(slice_of)


def _megascale_type(instruction: Instruction) -> str | None:
    if _TRANSFER_TYPE not in instruction.text:
        return None
    return instruction.frontend_attributes.get(_TRANSFER_TYPE)


def _rendezvous(instruction: Instruction) -> str:
    return instruction.frontend_attributes.get(_RENDEZVOUS) or instruction.name


def _transfer_row(instruction: Instruction, name: str, sides: dict[str, int],
                  slices: int | None, slice_of_id: Mapping[int, int] | None) -> CollectiveRow:
    """A megascale send/recv pair: a collective across slices, over DCN."""
    groups = megascale_slice_groups(instruction.frontend_attributes.get(_TARGET, ""),
                                    slice_of_id)
    if not groups:  # no target, or device ids the assignment does not know: every slice
        groups = [list(range(slices or 2))]
    size = max(len(group) for group in groups)
    return CollectiveRow("", name, str(_megascale_type(instruction)).lower(),
                         instruction.op_name, max(sides.values(), default=0), MEGASCALE,
                         len(groups), size, max(len(set(group)) for group in groups))


def megascale_slice_groups(target: str,
                           slice_of_id: Mapping[int, int] | None) -> list[list[int]] | None:
    """The slice indices of each group of an `_xla_megascale_target` (module docstring); None
    when the value has neither form or names a device the assignment does not hold."""
    compact = _COMPACT_TARGET.fullmatch(target.strip())
    if compact:
        slices = [int(number) - 1 for number in compact.group(1).split(",")]
        first, last = int(compact.group(2)), int(compact.group(3) or compact.group(2))
        return [slices] * (last - first + 1)
    try:
        id_groups = parse_nested_ints(target) if target.strip().startswith("{{") else None
    except TextSyntaxError:
        return None
    if not id_groups or slice_of_id is None:
        return None
    if any(device not in slice_of_id for group in id_groups for device in group):
        return None
    return [[slice_of_id[device] for device in group] for group in id_groups]


def _row(key: tuple[str, str], instruction: Instruction, payload: int, module: HloModule,
         slice_of: Sequence[int] | None) -> CollectiveRow:
    mode = group_mode(instruction)
    try:
        groups = participant_groups(instruction, module.replica_count, module.num_partitions)
    except TextSyntaxError:  # a group syntax XLA added after this was written: link unknown
        return CollectiveRow(key[0], key[1], instruction.opcode, instruction.op_name, payload,
                             mode, 0, 0, None)
    spanned = None
    if slice_of is not None and all(i < len(slice_of) for g in groups for i in g):
        spanned = max((len({slice_of[i] for i in group}) for group in groups), default=1)
    return CollectiveRow(key[0], key[1], instruction.opcode, instruction.op_name, payload, mode,
                         len(groups), max((len(g) for g in groups), default=0), spanned)


def group_mode(instruction: Instruction) -> str:
    """XLA's CollectiveOpGroupMode of a collective, from channel_id and use_global_device_ids."""
    has_channel = instruction.raw_attribute("channel_id") is not None
    global_ids = (instruction.raw_attribute("use_global_device_ids") or "").strip() == "true"
    if not has_channel:
        return "cross_replica"
    if instruction.opcode not in _HAS_GLOBAL_IDS:
        return "cross_partition"
    return "flattened_id" if global_ids else "cross_replica_and_partition"


def participant_groups(instruction: Instruction, replicas: int,
                       partitions: int) -> list[tuple[int, ...]]:
    """Each group of communicating devices, as logical ids (replica x partitions + partition)."""
    mode = group_mode(instruction)
    if instruction.opcode in _PERMUTES:
        pairs = parse_nested_ints(instruction.raw_attribute("source_target_pairs") or "{}")
        return _expand(pairs, mode, replicas, partitions)
    raw = instruction.raw_attribute("replica_groups")
    groups = parse_replica_groups(raw) if raw is not None else ()
    if not groups:
        count = replicas * partitions if mode == "flattened_id" else \
            partitions if mode == "cross_partition" else replicas
        groups = (tuple(range(count)),)
    return _expand(groups, mode, replicas, partitions)


def _expand(groups: Sequence[tuple[int, ...]], mode: str, replicas: int,
            partitions: int) -> list[tuple[int, ...]]:
    if mode == "flattened_id":
        return [tuple(group) for group in groups]
    if mode == "cross_partition":
        return [tuple(r * partitions + p for p in group) for r in range(replicas)
                for group in groups]
    if mode == "cross_replica":
        return [tuple(r * partitions + p for r in group) for p in range(partitions)
                for group in groups]
    return [tuple(r * partitions + p for r in group for p in range(partitions))
            for group in groups]
