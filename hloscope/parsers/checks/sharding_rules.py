"""Sharding rules of XLA's verifier (xla/service/hlo_verifier.cc: InstructionVerifier's
Preprocess, which runs HloSharding::Validate, and VerifyConsistentSharding for whiles and
conditionals).

A tiled sharding of an array, `devices=[d0,...,dn]...`, has one tile dimension per dimension of
the array, besides its subgroup dimensions (`last_tile_dim_replicate`, `last_tile_dims={...}`).
A while, its body's root and parameter and its condition's parameter carry one sharding where
they carry any; so do a conditional and its branches' roots. Shardings are compared as written,
metadata and spacing aside; an iota tile assignment (`<=[...]`) is not expanded, so a pair with
one is not compared. Each failure is a ParseError (exit 4) at the instruction's sharding.
"""
from __future__ import annotations

import re

from hloscope.model.instruction import Instruction
from hloscope.model.module import Computation, HloModule
from hloscope.parsers.checks.collective_rules import fail

_TILED = re.compile(r"\{\s*devices=\[([\d,\s]*)\]")
_LAST_TILE_DIMS = re.compile(r"last_tile_dims=\{([^}]*)\}")
_METADATA = re.compile(r"\s*metadata=\{[^{}]*\}")
_SPACE = re.compile(r"\s+")


def _at(instruction: Instruction) -> int:
    return max(instruction.text.find("sharding=", instruction.operands_end), 0)


def check_sharding_rank(instruction: Instruction) -> None:
    """A tiled array sharding's tile dimensions, less its subgroups, are the array's rank."""
    sharding = instruction.sharding
    match = _TILED.match(sharding) if sharding else None
    if sharding is None or match is None or not instruction.shape.is_array:
        return
    dimensions = [d for d in match.group(1).split(",") if d.strip()]
    subgroups = int("last_tile_dim_replicate" in sharding)
    last = _LAST_TILE_DIMS.search(sharding)
    if last is not None:
        subgroups += len([t for t in last.group(1).split(",") if t.strip()])
    rank = instruction.shape.rank
    if len(dimensions) - subgroups != rank:
        fail(instruction, "Number of tile assignment dimensions (excluding subgroups) is "
                          f"different than the input rank. sharding={sharding}, input_shape="
                          f"{instruction.shape}", _at(instruction))


def _canonical(sharding: str) -> str:
    return _SPACE.sub("", _METADATA.sub("", sharding))


def _check_consistent(caller: Instruction, members: list[Instruction]) -> None:
    reference: tuple[Instruction, str] | None = None
    for member in members:
        sharding = member.sharding
        if sharding is None:
            continue
        canonical = _canonical(sharding)
        if reference is None:
            reference = (member, canonical)
        elif canonical != reference[1] and "<=" not in canonical + reference[1]:
            fail(member, f"Inconsistent {caller.opcode} sharding among instructions: "
                         f"{reference[0].name} has {reference[1]}, {member.name} {canonical}",
                 _at(member))


def _parameter(computation: Computation | None) -> list[Instruction]:
    if computation is None:
        return []
    return [i for i in computation.instructions
            if i.opcode == "parameter" and i.parameter_number == 0]


def _root(computation: Computation | None) -> list[Instruction]:
    return [computation.root] if computation is not None and computation.instructions else []


def check_sharding_consistency(instruction: Instruction, module: HloModule) -> None:
    """A while or conditional and the instructions of its computations share one sharding."""
    computations = module.computations

    def called(key: str) -> Computation | None:
        name = instruction.called_computation(key)
        return computations.get(name.lstrip("%")) if name else None

    if instruction.opcode == "while":
        body, condition = called("body"), called("condition")
        members = [instruction, *_root(body), *_parameter(body), *_parameter(condition)]
    else:
        members = [instruction]
        for name in instruction.called_computations:
            members += _root(computations.get(name.lstrip("%")))
    _check_consistent(instruction, members)
