"""How a factory given to the API travels to the compile child: by file reference when it is a
top-level function of a file (as `--step FILE.py:function` sends it), else pickled by value."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("cloudpickle")

from hloscope.workloads.step import step_source  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_a_top_level_function_of_a_file_goes_by_reference(monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import flax_step

    fields = step_source(flax_step.make_step)
    assert fields["factory"] == f"{(EXAMPLES / 'flax_step.py').resolve()}:make_step"
    assert "payload" not in fields and fields["takes_layers"] is True
    sys.modules.pop("flax_step", None)


def test_a_closure_is_pickled_by_value() -> None:
    width = 8

    def make_step(remat):  # a closure: no module attribute names it
        return width, remat

    fields = step_source(make_step)
    assert fields["payload"] and fields["takes_layers"] is False
