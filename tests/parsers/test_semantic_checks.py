"""The semantic checks XLA's parser makes: each fault refused with exit 4 at file:line:col, by
hloscope and by XLA's own parser (jaxlib); the valid counterpart accepted by both; `lenient`
loads the faulty module (the checks skipped), never a syntax error or truncated text."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from semantic_cases import CASES, SemanticCase, module
from xla_oracle import xla_available

import hloscope
from hloscope.cli.main import cli
from hloscope.errors import ParseError

needs_xla = pytest.mark.skipif(not xla_available(), reason="jaxlib._hlo not available")
IDS = [case.fault for case in CASES]


def _xla_accepts(text: str) -> bool:
    from jaxlib import _hlo

    try:
        _hlo.hlo_module_from_text(text)
    except Exception:
        return False
    return True


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_fault_refused_at_its_line(case: SemanticCase, tmp_path: Path) -> None:
    path = tmp_path / "bad.hlo"
    path.write_text(case.invalid)
    with pytest.raises(ParseError) as caught:
        hloscope.load(path)
    error = caught.value
    assert error.exit_code == 4
    assert case.message in error.message
    assert (error.location.source, error.location.line) == (str(path), case.line)
    assert error.location.column >= 1


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_valid_counterpart_loads(case: SemanticCase) -> None:
    hloscope.load(case.valid)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_lenient_skips_the_check(case: SemanticCase) -> None:
    if case.lenient_skips:
        assert hloscope.load(case.invalid, lenient=True).entry_name == "e"
    else:  # the signatures analyses rely on: refused under --lenient too
        with pytest.raises(ParseError, match=re.escape(case.message)):
            hloscope.load(case.invalid, lenient=True)


@needs_xla
@pytest.mark.parametrize("case", [c for c in CASES if c.xla_refuses],
                         ids=[c.fault for c in CASES if c.xla_refuses])
def test_xla_agrees(case: SemanticCase) -> None:
    assert _xla_accepts(case.valid)
    assert not _xla_accepts(case.invalid)


def test_lenient_never_skips_syntax_or_truncation() -> None:
    valid = module("  ROOT %r = f32[4] negate(%p)")
    with pytest.raises(ParseError, match="expected ',' or the end"):
        hloscope.load(valid.replace("negate(%p)", "negate(%p) junk"), lenient=True)
    with pytest.raises(ParseError, match="truncated"):
        hloscope.load(valid[: valid.index("ROOT %r")] + "\n", lenient=True)


def test_cli_exit_4_and_lenient(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.fault == "call to an undefined computation")
    path = tmp_path / "bad.hlo"
    path.write_text(case.invalid)
    runner = CliRunner()
    refused = runner.invoke(cli, ["inspect", str(path)])
    assert refused.exit_code == 4
    assert f"{path}:{case.line}:" in refused.output
    edited = tmp_path / "edited.hlo"
    edited.write_text(next(c for c in CASES if c.fault == "integer literal out of range").invalid)
    for command in (["inspect"], ["flops"], ["remat"], ["snapshot"]):
        assert runner.invoke(cli, [*command, str(edited)]).exit_code == 4, command
        assert runner.invoke(cli, [*command, str(edited), "--lenient"]).exit_code == 0, command
    oom = runner.invoke(cli, ["oom", str(edited), "--lenient", "--capacity", "1GiB"])
    assert "out of range" not in oom.output  # refused later, for not being scheduled


def test_load_all_and_load_program_take_lenient() -> None:
    bad = next(c for c in CASES if c.fault == "undefined operand").invalid
    with pytest.raises(ParseError):
        hloscope.load_all(bad)
    assert len(hloscope.load_all(bad, lenient=True)) == 1
    with pytest.raises(ParseError):
        hloscope.load_program(bad)
    assert hloscope.load_program(bad, lenient=True).module.entry_name == "e"
