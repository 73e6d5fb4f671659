"""The live set at the peak in the categories an OOM is explained with.

`memory`'s categories (liveness/categories.py) say what a buffer is for; an OOM report speaks of
weights, optimizer state, gradients, saved activations, temporaries, collective buffers and
outputs. Two refinements: a temporary made by a collective (all-gather, all-reduce,
reduce-scatter, all-to-all, collective-permute, or their async start) is a *collective buffer*,
and so is anything in GPU collective memory `S(1)`; entry inputs and constants keep their names.
Bytes are the live peak's (per device, device memory spaces only).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from hloscope.analyses.memory.analysis import BufferRow

WEIGHTS = "weights"
OPTIMIZER_STATE = "optimizer state"
GRADIENTS = "gradients"
SAVED_ACTIVATIONS = "saved activations"
TEMPORARIES = "temporaries"
COLLECTIVE_BUFFERS = "collective buffers"
OUTPUTS = "outputs"
INPUTS = "inputs"
CONSTANTS = "constants"
ORDER = (WEIGHTS, OPTIMIZER_STATE, GRADIENTS, SAVED_ACTIVATIONS, TEMPORARIES,
         COLLECTIVE_BUFFERS, OUTPUTS, INPUTS, CONSTANTS)
MODEL_STATE = frozenset({WEIGHTS, OPTIMIZER_STATE, GRADIENTS, OUTPUTS, INPUTS, CONSTANTS})
_FROM_MEMORY = {"parameter": WEIGHTS, "optimizer state": OPTIMIZER_STATE, "input": INPUTS,
                "gradient": GRADIENTS, "saved activation": SAVED_ACTIVATIONS,
                "temporary": TEMPORARIES, "constant": CONSTANTS, "output": OUTPUTS}
COLLECTIVE_OPCODES = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all",
                      "collective-permute", "collective-broadcast", "ragged-all-to-all")


@dataclass(frozen=True, slots=True)
class CategoryBytes:
    category: str
    bytes: int
    share: float
    buffers: int

    def to_dict(self) -> dict:
        return asdict(self)


def is_collective(instruction: str) -> bool:
    """Whether a buffer's defining instruction is a collective (XLA names them by opcode)."""
    return instruction.startswith(COLLECTIVE_OPCODES)


def oom_category(row: BufferRow, backend: str) -> str:
    category = _FROM_MEMORY.get(row.category, TEMPORARIES)
    if category == TEMPORARIES and (is_collective(row.instruction)
                                    or (backend == "gpu" and row.memory_space == 1)):
        return COLLECTIVE_BUFFERS
    return category


def breakdown(rows: list[BufferRow], backend: str) -> list[CategoryBytes]:
    """Bytes per category of the rows (the live set at the peak), in `ORDER`, empty ones left
    out; shares are of the rows' total."""
    totals: dict[str, list[int]] = {}
    for row in rows:
        entry = totals.setdefault(oom_category(row, backend), [0, 0])
        entry[0] += row.bytes
        entry[1] += 1
    total = sum(entry[0] for entry in totals.values())
    return [CategoryBytes(name, totals[name][0], totals[name][0] / total if total else 0.0,
                          totals[name][1]) for name in ORDER if name in totals]


def category_bytes(parts: list[CategoryBytes], *names: str) -> int:
    return sum(part.bytes for part in parts if part.category in names)
