"""The optional C accelerator of the HLO text parser, or None (layer 0: imports no hloscope).

`_scan.c` takes the common, simple case of a few hot pure-Python functions of the parser and
declines everything else, so that the Python code reads it; where it gives a result, that result is
the Python code's exactly (see the C file's head for which functions). It is built by setup.py
when a C compiler is at hand; without it, or with the environment variable `HLOSCOPE_NO_NATIVE=1`
set before hloscope is imported, `scan` is None and the pure-Python parser runs alone. The parser
tests run both ways against the same independent truths.
"""
from __future__ import annotations

import os
from types import ModuleType


def _load() -> ModuleType | None:
    if os.environ.get("HLOSCOPE_NO_NATIVE", "") not in ("", "0"):
        return None
    try:
        from hloscope._native import _scan  # type: ignore[attr-defined]  # built on install
    except ImportError:
        return None
    return _scan


scan: ModuleType | None = _load()

__all__ = ["scan"]
