"""`hloscope.sweep(...)` with no folder and no cache argument uses the CLI's default build cache
($HLOSCOPE_CACHE_DIR here) and says so on stderr, as a notebook user calls it first."""
from __future__ import annotations

from pathlib import Path

import pytest

import hloscope


@pytest.mark.compile
def test_sweep_needs_no_folder_and_no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    result = hloscope.sweep(model="tiny", policies=["none", "full"], target="cpu", n_layers=1,
                            seq_len=32, batch=4)
    assert result.winner in ("none", "full")
    assert f"builds are cached in {tmp_path / 'cache'}" in capsys.readouterr().err
    assert any((tmp_path / "cache").rglob("optimized_hlo.txt"))
