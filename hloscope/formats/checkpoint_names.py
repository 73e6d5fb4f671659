"""`checkpoint_names.json`: a build's checkpoint names and what its remat variant does with each.

Written by the compile child beside the dump (`workloads.checkpoint_names`: JAX compiles
`checkpoint_name` to nothing, so only the traced jaxpr knows the names). One entry per
(name, source line) of the step:

    name, shape, dtype, bytes   the named value of one call (one layer's, inside a layer scan)
    source                      file:line of the checkpoint_name call
    made_by, made_at            the primitive that made the value and its file:line
    decision                    saved / offloaded / recomputed / not checkpointed (null: the
                                policy could not be asked)
    decided_by                  which policy answered, of the name or of the op that made it

`read_names` returns None when the file is absent (a build from before it, or a trace that could
not be walked): the names are then unknown, not empty.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hloscope.formats.json_text import read_json

NAMES_FILE = "checkpoint_names.json"
NAMES_SCHEMA = "hloscope/checkpoint-names/v1"


@dataclass(frozen=True)
class CheckpointName:
    name: str
    shape: tuple[int, ...]
    dtype: str
    bytes: int
    source: str
    made_by: str
    made_at: str
    decision: str | None
    decided_by: str

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CheckpointName:
        return cls(name=str(data["name"]), shape=tuple(int(d) for d in data["shape"]),
                   dtype=str(data["dtype"]), bytes=int(data["bytes"]),
                   source=str(data.get("source") or ""), made_by=str(data.get("made_by") or ""),
                   made_at=str(data.get("made_at") or ""), decision=data.get("decision"),
                   decided_by=str(data.get("decided_by") or ""))


def write_names(path: Path, names: list[CheckpointName], variant: str) -> None:
    path.write_text(json.dumps({"schema": NAMES_SCHEMA, "variant": variant,
                                "names": [asdict(n) for n in names]}, indent=1))


def read_names(folder: Path) -> list[CheckpointName] | None:
    """The names recorded in `folder` (a build or capture folder); None when there are none
    recorded or the file is not this schema."""
    data = read_json(folder / NAMES_FILE)
    if not isinstance(data, dict) or data.get("schema") != NAMES_SCHEMA:
        return None
    try:
        return [CheckpointName.from_dict(item) for item in data.get("names") or []]
    except (KeyError, TypeError, ValueError):
        return None
