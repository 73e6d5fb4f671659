"""The parser reads every complete corpus file, agrees with XLA's own parser, and refuses the
truncated ones precisely."""
from __future__ import annotations

import re

import pytest
from conftest import corpus_params, require_corpus
from xla_oracle import compare_with_xla, xla_available

import hloscope
from hloscope.errors import ParseError
from hloscope.parsers.validate import validate


@pytest.mark.parametrize("corpus_file", corpus_params(complete=True))
def test_complete_file_parses_and_validates(corpus_file) -> None:
    require_corpus()
    modules = hloscope.load_all(corpus_file.path)
    if corpus_file.modules.isdigit():
        assert len(modules) == int(corpus_file.modules)
    for module in modules:
        validate(module)
        assert module.instruction_count > 0
        assert module.entry_name in module.computations
    assert any(m.is_scheduled for m in modules) == corpus_file.scheduled


@pytest.mark.parametrize("corpus_file", corpus_params(complete=True))
def test_complete_file_agrees_with_xla(corpus_file) -> None:
    require_corpus()
    if not xla_available():
        pytest.skip("jaxlib is not importable: XLA's parser is the oracle here")
    text = corpus_file.path.read_text()
    disagreements = compare_with_xla(text, str(corpus_file.path))
    assert disagreements == []


def test_unknown_opcode_is_kept_and_named() -> None:
    text = "HloModule m\n\nENTRY e {\n  p = f32[4]{0} parameter(0)\n" \
           "  ROOT q = f32[4]{0} frobnicate(p), mode=fast\n}\n"
    module = hloscope.load(text)
    assert module.entry.root.opcode == "frobnicate"
    assert module.entry.root.operands == ("p",)
    assert hloscope.inspect(module).unknown_opcodes == ["frobnicate"]


def _last_computation_header(text: str) -> tuple[int, str]:
    """(line, name) of the last computation header, found independently of the parser."""
    found = (0, "")
    for number, line in enumerate(text.splitlines(), 1):
        match = re.match(r"(?:ENTRY\s+)?%?([\w.\-]+)\s*\(.*\)\s*->.*\{\s*$", line)
        if match:
            found = (number, match.group(1))
    return found


@pytest.mark.parametrize("corpus_file", corpus_params(complete=False))
def test_truncated_file_is_refused_precisely(corpus_file) -> None:
    require_corpus()
    text = corpus_file.path.read_text()
    total_lines = len(text.splitlines())
    header_line, last_computation = _last_computation_header(text)
    with pytest.raises(ParseError) as caught:
        hloscope.load(corpus_file.path)
    error = caught.value
    assert error.exit_code == 4
    assert error.location.line == total_lines
    assert error.location.source == str(corpus_file.path)
    assert "truncated" in error.message
    closed = text.rstrip().endswith("}")
    if closed:  # ends after a complete computation: the ENTRY is what is missing
        assert "no ENTRY computation" in error.message
        assert f"after computation {last_computation}" in error.message
    else:
        assert f"computation {last_computation} (opened at line {header_line})" in error.message
