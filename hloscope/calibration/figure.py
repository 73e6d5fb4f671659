"""One calibrated number and its provenance."""
from __future__ import annotations

from dataclasses import dataclass

DATASHEET, XLA, FIT, DEFAULT, MEASURED = "datasheet", "xla", "fit", "default", "measured"
UNCHECKED = "unchecked: no measurement on this device yet"


@dataclass(frozen=True)
class Figure:
    """`value`, its `kind` (datasheet, xla, fit, default or measured), its `source` (the
    committed result or document it comes from) and what checks it (`checked_by`: a test, or a
    committed result on data it was not fitted on)."""

    value: float
    kind: str
    source: str
    checked_by: str = UNCHECKED

    def to_dict(self) -> dict[str, object]:
        return {"value": self.value, "kind": self.kind, "source": self.source,
                "checked_by": self.checked_by}
