"""A saved name is matched to peak buffers by its own line and its producer's, but not by a
producer line inside an installed package (issue 38: in a virtual environment jax gives flax's
`Linear.__call__` line as the producer of every projection, which matched the other layer's dot).

Truth: hand-built rows; two buffers made by one library line are different values."""
from __future__ import annotations

from hloscope.analyses.memory.analysis import BufferRow
from hloscope.analyses.memory.checkpoint_names import name_rows
from hloscope.formats.checkpoint_names import CheckpointName

USER = "/home/me/model.py:41"
LIBRARY = "/home/me/.venv/lib/python3.11/site-packages/flax/nnx/nn/linear.py:422"
DEBIAN = "/usr/lib/python3/dist-packages/flax/nnx/nn/linear.py:422"


def _name(made_at: str) -> CheckpointName:
    return CheckpointName("hidden", (4, 32, 256), "float32", 131072, USER, "dot_general",
                          made_at, "saved", "test")


def _row(name: str, source: str, shape: str) -> BufferRow:
    return BufferRow(name, name, "{}", shape, 4, 4, 0, "temporary", "forward", "", source, "",
                     None, 0, 1)


LIVE = [_row("up.1", LIBRARY, "f32[4,32,256]"), _row("down.2", LIBRARY, "f32[4,32,128]"),
        _row("debian.3", DEBIAN, "f32[4,32,256]"), _row("named.4", USER, "f32[4,32,256]"),
        _row("helper.5", "/home/me/layers.py:9", "f32[4,32,256]")]


def _matched(made_at: str) -> list[str]:
    (row,) = name_rows([_name(made_at)], LIVE)
    assert row.at_peak is not None
    return [buffer.buffer for buffer in row.at_peak]


def test_a_producer_line_in_an_installed_package_matches_nothing() -> None:
    assert _matched(LIBRARY) == ["named.4"]
    assert _matched(DEBIAN) == ["named.4"]


def test_a_producer_line_in_the_users_code_still_matches() -> None:
    assert _matched("/home/me/layers.py:9") == ["named.4", "helper.5"]
    assert _matched("") == ["named.4"]
