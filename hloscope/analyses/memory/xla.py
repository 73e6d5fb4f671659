"""XLA's own memory figures of a module, read by the loader from what the compile left beside it.

Three sources, three different figures (docs/memory.md, docs/xla-memory-files.md):

- the **live-range dump** (`*-live-range.txt`): the bytes of the values live at one moment XLA
  picks (`Live ranges at N (peak)`), every memory space summed and every value counted on its
  own. Not a peak of anything memory holds, and on TPU it adds on-chip VMEM to HBM.
- the **buffer assignment** (`*-buffer-assignment.txt`): the allocation, arguments +
  temporaries + outputs - aliased, per memory space (XLA's buffer color is the layout's S(n)).
- **`memory_analysis()`** (CompiledMemoryStats), recorded by `hloscope build` in its manifest:
  on CPU and GPU it is the buffer assignment's device allocation to the byte; on TPU libtpu
  computes it for HBM alone, with the buffer assignment's arguments, outputs and aliases but
  temporaries of its own, counted after code generation and in no dump file.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

ALLOCATION_PARTS = ("argument_bytes", "output_bytes", "alias_bytes", "temp_bytes")
"""The parts of an allocation (arguments + temporaries + outputs - aliased), as memory_analysis()
names them."""


@dataclass(frozen=True, slots=True)
class XlaFigures:
    """XLA's own memory figures for the module, when its dump or its build gave them.

    `allocation_parts` are the buffer assignment's device spaces (`ALLOCATION_PARTS`);
    `memory_analysis` is memory_analysis() as the build recorded it (its `allocated_bytes`
    included), and `memory_analysis_note` says where it came from or why there is none."""

    live_peak_bytes: int | None = None
    live_peak_time: int | None = None
    allocation_bytes: int | None = None
    allocation_by_space: dict[int, int] = field(default_factory=dict)
    sources: tuple[str, ...] = ()
    allocation_parts: dict[str, int] = field(default_factory=dict)
    memory_analysis: dict[str, int | None] | None = None
    memory_analysis_note: str = ""

    @property
    def memory_analysis_bytes(self) -> int | None:
        """memory_analysis()'s allocated bytes (arguments + temporaries + outputs - aliased)."""
        record = self.memory_analysis
        return None if record is None else record.get("allocated_bytes")

    def to_dict(self) -> dict:
        data = asdict(self)
        data["allocation_by_space"] = {str(k): v for k, v in self.allocation_by_space.items()}
        data["sources"] = list(self.sources)
        data["memory_analysis_bytes"] = self.memory_analysis_bytes
        return data
