"""Structural mutations (tests/oracles/structural_mutations.py: a changed tuple index, dimension,
element type, operand, called computation, opcode, ROOT, ...) of the small scheduled module with a
loop and a conditional: each input loads and runs every analysis, or is refused with hloscope's
own error (a parse error at file:line:col), never another exception. The fuller run is
benchmarks/fuzz_mutations.py."""
from __future__ import annotations

import random

import pytest
from small_modules import LOOPS
from structural_mutations import STRUCTURAL_MUTATIONS, mutate_structure

import hloscope
from hloscope.errors import HloscopeError, ParseError

ANALYSES = ("inspect", "flops", "remat", "memory")


def _outcome(text: str) -> str:
    try:
        module = hloscope.load(text)
        for analysis in ANALYSES:
            getattr(hloscope, analysis)(module)
    except ParseError as error:
        assert error.location.line >= 1 and error.location.column >= 1, str(error)
        return "refused"
    except HloscopeError:
        return "refused"
    return "analysed"


@pytest.mark.parametrize("kind", sorted(STRUCTURAL_MUTATIONS))
def test_every_kind_analyses_or_is_refused(kind: str) -> None:
    outcomes = {_outcome(mutate_structure(LOOPS, random.Random(seed), kind)[1])
                for seed in range(6)}
    assert outcomes <= {"analysed", "refused"}


def test_mutations_keep_the_syntax_often_enough_to_reach_the_analyses() -> None:
    outcomes = [_outcome(mutate_structure(LOOPS, random.Random(seed))[1]) for seed in range(40)]
    assert outcomes.count("analysed") >= 5, outcomes
