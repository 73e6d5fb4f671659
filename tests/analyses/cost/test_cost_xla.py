"""Totals under XLA's conventions equal XLA's own HloCostAnalysis: on hand-built modules that
exercise each rule (exactly), on every complete corpus module and on every fixture (within 1%)."""
from __future__ import annotations

import pytest
from conftest import FIXTURES, corpus_params, require_corpus
from cost_cases import CASES
from cost_oracle import close, module_texts, xla_cost
from xla_oracle import printing_beside, xla_available

import hloscope
from hloscope.analyses.cost import CostAnalysis, CostOptions

FIXTURE_HLO = sorted(FIXTURES.glob("**/*_optimizations.txt"))


@pytest.fixture(autouse=True)
def _need_xla() -> None:
    if not xla_available():
        pytest.skip("jaxlib is not importable: XLA's cost analysis is the oracle here")


def xla_like_totals(text: str) -> tuple[int, int, int]:
    total = CostAnalysis(hloscope.load(text), CostOptions.like_xla()).total
    return total.flops, total.transcendentals, total.bytes_accessed


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_matches_xla_exactly(name: str) -> None:
    text = CASES[name]
    want = xla_cost(text)
    assert xla_like_totals(text) == (want.flops, want.transcendentals, want.bytes_accessed)


def assert_module_matches(text: str, where: str, xla_text: str | None = None) -> None:
    """`xla_text`: the same program as XLA can read it, where `text` is newer than its parser."""
    want = xla_cost(xla_text or text)
    flops, transcendentals, bytes_accessed = xla_like_totals(text)
    assert close(flops, want.flops), f"{where}: FLOPs {flops} vs XLA {want.flops}"
    assert close(transcendentals, want.transcendentals), f"{where}: transcendentals"
    assert close(bytes_accessed, want.bytes_accessed), \
        f"{where}: bytes {bytes_accessed} vs XLA {want.bytes_accessed}"


@pytest.mark.parametrize("corpus_file", corpus_params(complete=True))
def test_corpus_totals_match_xla(corpus_file) -> None:
    require_corpus()
    for index, text in enumerate(module_texts(corpus_file.path.read_text())):
        assert_module_matches(text, f"{corpus_file.id} module {index}")


@pytest.mark.parametrize("path", FIXTURE_HLO, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_totals_match_xla(path) -> None:
    assert_module_matches(path.read_text(), str(path), printing_beside(path))


def test_fixtures_exist() -> None:
    assert FIXTURE_HLO, f"no HLO fixtures under {FIXTURES}"
