"""`api_version=API_VERSION_UNSPECIFIED`, the one token of 2023-era dumps (PyTorch/XLA, TF-XLA)
that XLA's parser now refuses: refused with the token named and a hint (exit 4, at the token),
and loaded under --lenient with a warning on stderr that names where (issue 37, item 6)."""
from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from semantic_cases import module
from xla_oracle import xla_available

import hloscope
from hloscope.cli.main import cli
from hloscope.errors import ParseError

_LINE = ('  ROOT %r = f32[4] custom-call(%p), custom_call_target="f", '
         "api_version=API_VERSION_UNSPECIFIED")
TEXT = module(_LINE)
LINE_NUMBER = 19  # semantic_cases.BODY_LINE: the body's first line
COLUMN = _LINE.index("API_VERSION_UNSPECIFIED") + 1


@pytest.mark.skipif(not xla_available(), reason="jaxlib._hlo not available")
def test_xla_refuses_the_token_and_takes_the_original() -> None:
    from jaxlib import _hlo

    with pytest.raises(Exception, match="api_version|API_VERSION"):
        _hlo.hlo_module_from_text(TEXT)
    _hlo.hlo_module_from_text(TEXT.replace("UNSPECIFIED", "ORIGINAL"))


def test_refused_with_the_token_and_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "old.hlo"
    path.write_text(TEXT)
    with pytest.raises(ParseError) as caught:
        hloscope.load(path)
    error = caught.value
    assert error.exit_code == 4
    assert (error.location.line, error.location.column) == (LINE_NUMBER, COLUMN)
    assert "api_version=API_VERSION_UNSPECIFIED" in error.message
    assert "--lenient" in error.message


def test_lenient_loads_it_with_a_warning(tmp_path: Path,
                                         caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "old.hlo"
    path.write_text(TEXT)
    with caplog.at_level(logging.WARNING, logger="hloscope"):
        loaded = hloscope.load(path, lenient=True)
    assert loaded.entry.root.custom_call_target == "f"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert f"{path}:{LINE_NUMBER}:{COLUMN}: api_version=API_VERSION_UNSPECIFIED" in warnings[0]
    assert "1 custom-call(s)" in warnings[0]


def test_no_warning_without_the_token(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="hloscope"):
        hloscope.load(TEXT.replace("UNSPECIFIED", "ORIGINAL"), lenient=True)
    assert not caplog.records


def test_cli_exit_4_then_lenient_warns(tmp_path: Path) -> None:
    path = tmp_path / "old.hlo"
    path.write_text(TEXT)
    runner = CliRunner()
    refused = runner.invoke(cli, ["inspect", str(path)])
    assert refused.exit_code == 4
    assert f"{path}:{LINE_NUMBER}:{COLUMN}: error: api_version=API_VERSION_UNSPECIFIED" \
        in refused.output
    # The warning goes through logging: on a user's terminal (no handler configured) Python's
    # last-resort handler prints it on stderr as it is.
    accepted = subprocess.run([sys.executable, "-m", "hloscope", "inspect", str(path),
                               "--lenient"], capture_output=True, text=True, check=False)
    assert accepted.returncode == 0, accepted.stderr
    assert f"warning: {path}:{LINE_NUMBER}:{COLUMN}: api_version=API_VERSION_UNSPECIFIED " \
        "accepted under --lenient" in accepted.stderr
