"""One account of a program's memory: each figure per memory space, and every gap between two
figures with its reason in one line.

The figures (docs/memory.md): the **live peak** (hloscope, from the text: the most bytes live at
once), the **estimated allocation** (hloscope, from the text: XLA's buffer assigner and heap
simulator replayed), and, when XLA's data is at hand, **XLA's allocation** (its buffer
assignment) and **`memory_analysis()`** (the compile's own record, which a `hloscope build`
folder keeps). Rows go device spaces first, then on-chip ones (TPU VMEM, SMEM), host and
unknown; a device total is added when several spaces live in device memory. `memory_analysis()`
counts device memory only (on TPU: HBM), so it stands on the device row.

The differences are between device figures only: a figure that adds on-chip spaces to HBM (XLA's
live-range dump on TPU) is compared with nothing but hloscope's count of the same values. Each
reason is what the tests measured (named beside each text below), not a guess; where a
difference has not been seen on any tested program the reason says so.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from hloscope.analyses.memory.xla import ALLOCATION_PARTS, XlaFigures

_LOCATION_ORDER = {"device": 0, "on-chip": 1, "host": 2, "unknown": 3}
DEVICE_TOTAL = "device total"

# tests/analyses/memory/test_memory_programs.py: the live peak is never above XLA's allocation
# on the generated CPU programs; the heap's packing puts the allocation up to 17% above it.
_PACKING = "XLA packs buffers of different moments at fixed offsets: gaps and alignment add to it"
# Above XLA's allocation on CPU (or a backend with no known reason): no program can hold more at
# once than its allocation, so this is a hloscope bug (invariants.py checks it on every test).
_PEAK_ABOVE_BUG = "above XLA's whole allocation, which no program can be: a hloscope bug"
# Above the allocation, by backend: docs/memory.md ("Away from the peak ...", GPU fixtures);
# TPU: tests/analyses/memory/test_heap_tpu.py (many_outputs: XLA's live-range dump sizes a
# 200-element tuple at 1,600 bytes, libtpu's buffer assignment at 1,024).
_PEAK_ABOVE = {
    "gpu": "XLA:GPU's may-alias hints reuse buffers of other shapes, which the live peak keeps "
           "apart",
    "tpu": "the live peak sizes tuple tables at 8 bytes a pointer (XLA's live ranges), libtpu "
           "at 4",
}
# tests/analyses/memory/test_heap.py (fixtures: CPU -1.37%, 0, +0.03%; GPU -0.007%,
# +0.63%; TPU: the buffer assignment's HBM parts to the byte), test_memory_programs.py (17 CPU
# programs, -0.068% to 0), test_heap_tpu.py and tests/analyses/oom/test_tpu_fit.py.
# CPU and GPU, by the sign of estimate - allocation (benchmarks/results/memory_truth.txt: CPU
# -1.31% to 0 on 42 programs; GPU -0.045% to +0.632%).
_ESTIMATE_BELOW = "XLA's heap simulator replayed: XLA's best fit left holes the replay does not " \
                  "(buffers of equal size met in another order; within 2%)"
_ESTIMATE_ABOVE = {
    "cpu": "XLA's heap simulator replayed: the replay left holes XLA's best fit did not (buffers "
           "of equal size met in another order; within 2%)",
    "gpu": "XLA:GPU's may-alias hints (not modelled) let XLA reuse buffers the replay keeps "
           "apart (GPU: within 2%)",
}
_ESTIMATE = {
    "tpu": "libtpu's buffer assignment replayed (HBM arrays packed at 16 KiB, a 16 KiB slot per "
           "tuple table; TPU: within 2%)",
}
_ESTIMATE_OTHER = "XLA's heap simulator replayed from the text (not tested on this backend)"
# tests/parsers/test_xla_memory_fixtures.py: on CPU and GPU every memory_analysis() field is the
# buffer assignment's; on TPU arguments, outputs and aliases are, temporaries are not
# (test_tpu_hbm_temporaries_equal_memory_analysis, xfail; tests/parsers/test_xla_memory_tpu.py:
# 0 temporaries reported where the dump's HBM temporary holds tuple tables).
_ANALYSIS_EQUAL = "memory_analysis() adds up the buffer assignment: arguments + temporaries + " \
                  "outputs - aliased"
# tests/analyses/memory/test_heap.py (both TPU fixtures; the generated TPU programs but scans).
_TPU_TEMPORARIES = "libtpu counts 15,872 B more per HBM tuple table (and once more) than its " \
                   "buffer assignment holds, in no dump file"
_UNSEEN = "not seen on any tested CPU or GPU program: is the build's record of this module?"
# tests/analyses/memory/test_memory_fixtures.py, test_memory_programs.py: hloscope's values at
# XLA's moment equal XLA's list on every fixture and generated program.
_MOMENT_EQUAL = "same moment, same values: XLA's rule for its moment and its per-value sum " \
                "reproduced"
_MOMENT_DIFFERS = "the values live at XLA's moment differ from XLA's list (equal on every tested " \
                  "program)"
_DUMP_IS_PEAK = "XLA's moment is the highest point here"
_DUMP_NOT_PEAK = "XLA sums the values at the moment it picks, each on its own (no sharing): not " \
                 "the highest point"


@dataclass(frozen=True, slots=True)
class SpaceFigures:
    """One memory space's figures (or the device total's: `memory_space` None)."""

    memory_space: int | None
    name: str
    location: str
    live_peak_bytes: int
    estimated_allocation_bytes: int | None = None
    xla_allocation_bytes: int | None = None
    memory_analysis_bytes: int | None = None

    @property
    def label(self) -> str:
        return DEVICE_TOTAL if self.memory_space is None else \
            f"S({self.memory_space}) {self.name}"

    def to_dict(self) -> dict:
        return {"label": self.label, **asdict(self)}


@dataclass(frozen=True, slots=True)
class Difference:
    """`ours - theirs` for two device figures, and why they differ."""

    key: str
    label: str
    ours: int
    theirs: int
    reason: str

    @property
    def bytes(self) -> int:
        return self.ours - self.theirs

    @property
    def share(self) -> float | None:
        return self.bytes / self.theirs if self.theirs else None

    def to_dict(self) -> dict:
        return {**asdict(self), "bytes": self.bytes, "share": self.share}


@dataclass(frozen=True, slots=True)
class MemoryStory:
    """Every figure per space, every difference with its reason, and what is not at hand."""

    spaces: list[SpaceFigures]
    differences: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def device(self) -> SpaceFigures | None:
        """The row of device memory: the device total, else the one device space."""
        rows = [row for row in self.spaces if row.location == "device"]
        total = [row for row in rows if row.memory_space is None]
        found = total or rows
        return found[0] if found else None

    def to_dict(self) -> dict:
        return {"spaces": [row.to_dict() for row in self.spaces],
                "differences": [d.to_dict() for d in self.differences], "notes": self.notes}


@dataclass(frozen=True, slots=True)
class StoryInputs:
    """What the story is told from: hloscope's figures (`spaces`: the live peak and estimate per
    space, no XLA figure yet) and XLA's."""

    backend: str
    spaces: Sequence[SpaceFigures]
    device_peak_bytes: int
    estimated_allocation_bytes: int | None
    xla_moment_bytes: int
    xla: XlaFigures | None


def memory_story(inputs: StoryInputs) -> MemoryStory:
    rows = _rows(inputs)
    story = MemoryStory(rows)
    device = story.device
    if inputs.xla is None or device is None:
        return story
    return MemoryStory(rows, _differences(inputs, device), _notes(inputs))


def _rows(inputs: StoryInputs) -> list[SpaceFigures]:
    xla = inputs.xla
    by_space = xla.allocation_by_space if xla else {}
    rows = [SpaceFigures(s.memory_space, s.name, s.location, s.live_peak_bytes,
                         s.estimated_allocation_bytes,
                         None if s.memory_space is None else by_space.get(s.memory_space))
            for s in sorted(inputs.spaces, key=_space_order)]
    device = [n for n, row in enumerate(rows) if row.location == "device"]
    total = SpaceFigures(None, DEVICE_TOTAL, "device", inputs.device_peak_bytes,
                         inputs.estimated_allocation_bytes,
                         xla.allocation_bytes if xla else None,
                         xla.memory_analysis_bytes if xla else None)
    if len(device) > 1:
        rows.insert(device[-1] + 1, total)
    elif device:
        only = rows[device[0]]
        rows[device[0]] = SpaceFigures(
            only.memory_space, only.name, only.location, only.live_peak_bytes,
            only.estimated_allocation_bytes, total.xla_allocation_bytes,
            total.memory_analysis_bytes)
    return rows


def _space_order(space: SpaceFigures) -> tuple[int, int]:
    return _LOCATION_ORDER.get(space.location, len(_LOCATION_ORDER)), space.memory_space or 0


def _differences(inputs: StoryInputs, device: SpaceFigures) -> list[Difference]:
    xla, backend = inputs.xla, inputs.backend
    assert xla is not None
    found: list[Difference] = []
    allocation, analysis = xla.allocation_bytes, xla.memory_analysis_bytes
    estimated = device.estimated_allocation_bytes
    if allocation is not None:
        found.append(Difference(
            "live_peak_minus_allocation", "live peak - XLA allocation", device.live_peak_bytes,
            allocation, _PACKING if device.live_peak_bytes <= allocation
            else _PEAK_ABOVE.get(backend, _PEAK_ABOVE_BUG)))
        if estimated is not None:
            found.append(Difference(
                "estimated_minus_allocation", "estimated - XLA allocation", estimated,
                allocation, _estimate_reason(backend, estimated - allocation)))
    if analysis is not None and allocation is not None:
        found.append(Difference(
            "memory_analysis_minus_allocation", "memory_analysis() - XLA allocation", analysis,
            allocation, _analysis_reason(backend, xla)))
    if analysis is not None and estimated is not None:
        found.append(Difference(
            "estimated_minus_memory_analysis", "estimated - memory_analysis()", estimated,
            analysis, _estimate_vs_analysis(backend, xla, estimated - analysis)))
    found += _dump_differences(inputs, device)
    return found


def _estimate_reason(backend: str, gap: int) -> str:
    """Why the estimate is `gap` bytes off XLA's allocation (its sign picks the reason)."""
    if not gap:
        return "equal: the replay packs as XLA did"
    if backend in _ESTIMATE_ABOVE:
        return _ESTIMATE_ABOVE[backend] if gap > 0 else _ESTIMATE_BELOW
    return _ESTIMATE.get(backend, _ESTIMATE_OTHER)


def reason_sign(reason: str) -> int:
    """The sign of (ours - theirs) a reason explains: -1 below, +1 above, 0 either or none."""
    if reason in (_PACKING, _ESTIMATE_BELOW):
        return -1
    if reason in (_PEAK_ABOVE_BUG, *_PEAK_ABOVE.values(), *_ESTIMATE_ABOVE.values()):
        return 1
    return 0


def _analysis_reason(backend: str, xla: XlaFigures) -> str:
    record = xla.memory_analysis or {}
    differing = [part for part in ALLOCATION_PARTS
                 if part in xla.allocation_parts and record.get(part) is not None
                 and record[part] != xla.allocation_parts[part]]
    if not differing and xla.memory_analysis_bytes == xla.allocation_bytes:
        return _ANALYSIS_EQUAL
    if backend == "tpu" and differing == ["temp_bytes"]:
        extra = (record["temp_bytes"] or 0) - xla.allocation_parts["temp_bytes"]
        return f"only temporaries differ ({extra:+,} B): {_TPU_TEMPORARIES}"
    parts = ", ".join(part.removesuffix("_bytes") for part in differing) or "the totals"
    return f"{parts} differ: " + ("libtpu's own figures" if backend == "tpu" else _UNSEEN)


def _estimate_vs_analysis(backend: str, xla: XlaFigures, gap: int) -> str:
    if not gap:
        return "equal: the replay packs as XLA did"
    if xla.memory_analysis_bytes == xla.allocation_bytes:
        return _estimate_reason(backend, gap)
    if backend == "tpu":
        return "the estimate replays libtpu's buffer assignment; memory_analysis() counts " \
               "temporaries of libtpu's own (not its fit criterion)"
    return "both gaps above"


def _dump_differences(inputs: StoryInputs, device: SpaceFigures) -> list[Difference]:
    xla = inputs.xla
    if xla is None or xla.live_peak_bytes is None:
        return []
    found = [Difference("moment_minus_live_range_dump", "hloscope at XLA's moment - XLA's dump",
                        inputs.xla_moment_bytes, xla.live_peak_bytes,
                        _MOMENT_EQUAL if inputs.xla_moment_bytes == xla.live_peak_bytes
                        else _MOMENT_DIFFERS)]
    if _all_on_device(inputs):
        peak = device.live_peak_bytes
        found.insert(0, Difference(
            "live_peak_minus_live_range_dump", "live peak - XLA's live-range dump", peak,
            xla.live_peak_bytes, _DUMP_IS_PEAK if peak == xla.live_peak_bytes
            else _DUMP_NOT_PEAK))
    return found


def _all_on_device(inputs: StoryInputs) -> bool:
    return all(space.location == "device" for space in inputs.spaces)


def _notes(inputs: StoryInputs) -> list[str]:
    xla = inputs.xla
    assert xla is not None
    notes = []
    if xla.memory_analysis is None and xla.memory_analysis_note:
        notes.append(f"memory_analysis(): {xla.memory_analysis_note}")
    if xla.live_peak_bytes is not None and not _all_on_device(inputs):
        apart = ", ".join(f"S({s.memory_space}) {s.name}" for s in
                          sorted(inputs.spaces, key=_space_order) if s.location != "device")
        notes.append(f"XLA's live-range dump adds {apart} to device memory at the moment it "
                     "picks: compared with no device figure, only with hloscope's count of the "
                     "same values")
    return notes
