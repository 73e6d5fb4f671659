"""Pausing Python's cyclic garbage collector while an analysis allocates.

Analysing a large module allocates hundreds of thousands of small objects (costs, charges) while
the loaded module holds hundreds of thousands more; every automatic collection then traverses
all of them, which costs a third of the analysis time on a 50 MB module. The analyses create no
reference cycles, so nothing is lost by collecting once, afterwards, instead.
"""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """Disables automatic collection inside the block (nesting is fine) and restores it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
