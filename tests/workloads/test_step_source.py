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


def test_a_file_reference_is_read_without_importing_the_file(tmp_path: Path) -> None:
    """`--step FILE.py:function`: whether it takes `layers` comes from the file's syntax tree,
    so the parent process imports neither the file nor jax (the file here raises if imported);
    a decorated `def` is imported, and an import that fails is the user's error (InputError)."""
    from hloscope.errors import InputError, UsageError
    from hloscope.workloads.step import reference_takes_layers

    step = tmp_path / "mine.py"
    step.write_text("raise RuntimeError('imported')\n\n"
                    "def with_layers(remat, layers):\n    pass\n\n"
                    "def plain(remat, unrolled=False):\n    pass\n\n"
                    "def nothing():\n    pass\n\n"
                    "@staticmethod\ndef decorated(remat, layers):\n    pass\n")
    assert reference_takes_layers(f"{step}:with_layers") is True
    assert reference_takes_layers(f"{step}:plain") is False
    with pytest.raises(UsageError, match="must take remat"):
        reference_takes_layers(f"{step}:nothing")
    with pytest.raises(InputError, match="cannot import .*RuntimeError: imported"):
        reference_takes_layers(f"{step}:decorated")
