"""Compiled facts for remedies: the variants of a `hloscope sweep` folder (its sweep.json).

A sweep row gives, per remat variant, the device memory XLA's buffer assignment needs
(`required_bytes`), the fit verdict and hloscope's FLOP counts of the compiled program; they are
attached to the matching remedy (`remat:<variant>`) as compiled facts beside the prediction.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from hloscope.analyses.oom.remedies import Remedy
from hloscope.errors import InputError

SWEEP_FILE = "sweep.json"


def read_sweep_rows(folder: Path) -> list[dict]:
    path = folder / SWEEP_FILE if folder.is_dir() else folder
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise InputError(f"{path}: not a sweep result ({error})") from None
    rows = data.get("variants") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise InputError(f"{path}: no variants in this sweep result")
    return rows


def attach_compiled(remedies: list[Remedy], rows: list[dict],
                    base_flops: int | None) -> tuple[list[Remedy], list[str]]:
    """Remedies with the compiled facts of their sweep variant; the variants left unmatched."""
    by_name = {f"remat:{row.get('variant')}": row for row in rows}
    attached = []
    for remedy in remedies:
        row = by_name.pop(remedy.name, None)
        attached.append(remedy if row is None else _with_row(remedy, row, base_flops))
    return attached, sorted(name.removeprefix("remat:") for name in by_name)


def _with_row(remedy: Remedy, row: dict, base_flops: int | None) -> Remedy:
    flops = row.get("total_flops")
    extra = None if flops is None or base_flops is None else int(flops) - base_flops
    return dataclasses.replace(remedy, compiled_bytes=row.get("required_bytes"),
                               compiled_fits=row.get("fits"), compiled_extra_flops=extra)
