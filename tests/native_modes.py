"""Running a test folder with and without the parser's C accelerator (hloscope._native).

The accelerator only takes what it reads exactly as the pure-Python parser does, so every parser
test must pass both ways against the same truths (XLA's own parser, the corpus, hand-written
modules). tests/conftest.py parametrizes the tests of FOLDERS with `parser_mode`: each runs once
with the accelerator (skipped when it is not built) and once with it switched off, in this
process (every module's `native` reference set to None) and in child processes
(HLOSCOPE_NO_NATIVE=1).
"""
from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from hloscope._native import scan

MODES = ("native", "python")


def switch_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pure-Python parser for the rest of the test."""
    monkeypatch.setenv("HLOSCOPE_NO_NATIVE", "1")
    for name, module in list(sys.modules.items()):
        if name.startswith("hloscope") and scan is not None and \
                getattr(module, "native", None) is scan:
            monkeypatch.setattr(module, "native", None)


FOLDERS = ("parsers", "model")  # tests/<folder>: the parser's tests and the model's readers


def parametrize(metafunc: pytest.Metafunc) -> None:
    """For tests/conftest.py's pytest_generate_tests: the tests of FOLDERS run both ways (a
    module that sets BOTH_WAYS_ITSELF compares the two itself)."""
    path = metafunc.definition.path
    if (path.parent.name in FOLDERS and path.parent.parent.name == "tests"
            and not getattr(metafunc.module, "BOTH_WAYS_ITSELF", False)):
        metafunc.parametrize("parser_mode", MODES, indirect=True)


@pytest.fixture(autouse=True)
def parser_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The mode `parametrize` gave the test ("native" when it gave none)."""
    mode = getattr(request, "param", "native")
    if mode == "native" and scan is None and hasattr(request, "param"):
        pytest.skip("the C accelerator is not built (pip install -e . builds it)")
    if mode == "python":
        switch_off(monkeypatch)
    yield mode
