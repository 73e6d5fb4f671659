"""Every committed fixture module parses, validates, and agrees with XLA's own parser."""
from __future__ import annotations

import pytest
from conftest import FIXTURES
from xla_oracle import compare_with_xla, compare_with_xla_printing, printing_beside, xla_available

import hloscope
from hloscope.parsers.validate import validate

FIXTURE_HLO = sorted(FIXTURES.glob("**/*_optimizations.txt"))


def test_fixtures_exist() -> None:
    assert FIXTURE_HLO, f"no HLO fixtures under {FIXTURES}: run fixtures/make_fixtures.py"


@pytest.mark.parametrize("path", FIXTURE_HLO, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_parses_and_agrees_with_xla(path) -> None:
    module = hloscope.load(path)
    validate(module)
    assert module.is_scheduled == ("after_optimizations" in path.name)
    if not xla_available():
        pytest.skip("jaxlib is not importable: XLA's parser is the oracle here")
    reference = printing_beside(path)
    if reference is not None:  # text newer than this jaxlib's parser: its own printing
        assert compare_with_xla_printing(path.read_text(), str(path), reference) == []
    else:
        assert compare_with_xla(path.read_text(), str(path)) == []


FIXTURE_DIRS = sorted(p.parent for p in FIXTURES.glob("*/*/meta.json"))


@pytest.mark.parametrize("folder", FIXTURE_DIRS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_parameter_bytes_equal_xla_memory_analysis(folder) -> None:
    """Padded sizes (TPU tiling included) of the entry parameters are what XLA allocates."""
    import json

    result = hloscope.inspect(hloscope.load(folder))
    expected = json.loads((folder / "meta.json").read_text())["memory"]["argument_bytes"]
    assert sum(p.padded_bytes for p in result.parameters) == expected
