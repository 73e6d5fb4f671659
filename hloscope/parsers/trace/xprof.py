"""xprof (tensorboard-plugin-profile) as a cross-check: its memory_viewer's peak heap.

Optional: `pip install 'hloscope[profile]'`. xprof's converters run offline on an XSpace. For CPU
traces only memory_viewer, graph_viewer and trace_viewer (and hlo_stats) give data;
memory_viewer needs the tool list computed first, and writes cache files beside the XSpace, so
it runs on a copy in a temporary folder. Its peak heap is XLA's allocation as the buffer
assignment gives it (arguments, temporaries, outputs; padded), not hloscope's live peak.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hloscope.optional import available

MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class XprofMemory:
    module: str
    peak_heap_bytes: int
    peak_unpadded_heap_bytes: int


def xprof_peak_heap(xplane: Path, module: str, program_id: int | None) -> XprofMemory | None:
    """memory_viewer's peak heap of a program of an XSpace file; None when xprof gives none."""
    if not available("xprof"):
        return None
    from xprof.convert import raw_to_tool_data

    name = module if program_id is None else f"{module}({program_id})"
    with tempfile.TemporaryDirectory(prefix="hloscope-xprof-") as scratch:
        copy = Path(scratch) / xplane.name.removesuffix(".gz")
        _copy(xplane, copy)
        with native_logs_silenced():
            raw_to_tool_data.xspace_to_tool_names([str(copy)])
            data, _ = raw_to_tool_data.xspace_to_tool_data(
                [str(copy)], "memory_viewer", {"module_name": name, "memory_space": "0"})
    if not data:
        return None
    viewer = json.loads(data)
    return XprofMemory(name, round(viewer["peakHeapMib"] * MIB),
                       round(viewer["peakUnpaddedHeapMib"] * MIB))


@contextlib.contextmanager
def native_logs_silenced() -> Iterator[None]:
    """xprof's C++ converters log to file descriptor 2 (absl); HLOSCOPE_DEBUG=1 keeps them."""
    if os.environ.get("HLOSCOPE_DEBUG"):
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _copy(source: Path, target: Path) -> None:
    if source.suffix == ".gz":
        import gzip

        target.write_bytes(gzip.decompress(source.read_bytes()))
    else:
        shutil.copyfile(source, target)
