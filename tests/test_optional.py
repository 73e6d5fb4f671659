"""Optional dependencies: one way to import them, one message when they are missing."""
from __future__ import annotations

import json
import sys

import pytest

from hloscope.errors import EXIT_MISSING_DEPENDENCY, MissingDependencyError, UsageError
from hloscope.optional import (
    available,
    missing_compiler_modules,
    require,
    require_compiler,
)


def test_require_returns_the_module() -> None:
    assert require("json", "plot") is json


@pytest.mark.parametrize(("purpose", "message"), [
    (None, "hloscope_no_such_module is not installed: pip install 'hloscope[plot]'"),
    ("plots need it", "plots need it: pip install 'hloscope[plot]'"),
])
def test_a_missing_module_names_the_extra(purpose: str | None, message: str) -> None:
    with pytest.raises(UsageError) as raised:
        require("hloscope_no_such_module.sub", "plot", purpose)
    assert str(raised.value) == message
    assert raised.value.exit_code == EXIT_MISSING_DEPENDENCY
    assert isinstance(raised.value, MissingDependencyError)


def test_a_blocked_module_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    from hloscope.reports.renderers.plot import load_pyplot

    with pytest.raises(UsageError, match=r"plots need matplotlib: pip install 'hloscope\[plot\]'"):
        load_pyplot()
    assert not available("matplotlib")


def test_available() -> None:
    assert available("json") and available("hloscope.units")
    assert not available("hloscope_no_such_module") and not available("json.no_such_module")


@pytest.mark.parametrize(("backend", "blocked", "extra"), [
    ("cpu", "jax", "jax"), ("tpu", "libtpu", "tpu"), ("gpu", "jax_cuda12_plugin", "gpu"),
])
def test_a_compile_without_its_backend_names_the_extra(monkeypatch: pytest.MonkeyPatch,
                                                      backend: str, blocked: str,
                                                      extra: str) -> None:
    monkeypatch.setitem(sys.modules, blocked, None)  # as if not installed
    assert blocked in missing_compiler_modules(backend)
    with pytest.raises(MissingDependencyError) as raised:
        require_compiler(backend, f"a build for {backend}")
    assert str(raised.value).startswith(f"a build for {backend} needs {blocked}")
    assert str(raised.value).endswith(f"pip install 'hloscope[{extra}]'")
