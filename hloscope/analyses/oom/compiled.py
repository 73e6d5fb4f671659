"""Compiled facts for remedies: the variants of a `hloscope sweep` folder (`formats.sweep`).

A sweep row gives, per remat variant, the device memory XLA's buffer assignment needs
(`required_bytes`), the fit verdict and hloscope's FLOP counts of the compiled program; they are
attached to the matching remedy (`remat:<variant>`) as compiled facts beside the prediction.
A sweep compiled with `--optimizer-offload` is every variant with the optimizer state on the
host: its row of the diagnosed build's own variant is the compiled `optimizer-offload` remedy,
and its other rows (a remat change *and* the offload) match no single remedy.
"""
from __future__ import annotations

import dataclasses

from hloscope.analyses.oom.remedies import OPTIMIZER_OFFLOAD, Remedy
from hloscope.formats.sweep import SweepRow


def attach_compiled(remedies: list[Remedy], rows: list[SweepRow], base_flops: int | None,
                    offloaded: bool = False,
                    own_variant: str | None = None) -> tuple[list[Remedy], list[str]]:
    """Remedies with the compiled facts of their sweep variant; the variants left unmatched.
    `offloaded`: the sweep ran with the optimizer state offloaded; `own_variant`: the variant
    of the diagnosed build (its row there is the optimizer-offload remedy)."""
    if offloaded:
        by_name = {OPTIMIZER_OFFLOAD if row.variant == (own_variant or "none")
                   else f"offloaded:{row.variant}": row for row in rows}
    else:
        by_name = {f"remat:{row.variant}": row for row in rows}
    attached = []
    for remedy in remedies:
        row = by_name.pop(remedy.name, None)
        attached.append(remedy if row is None else _with_row(remedy, row, base_flops))
    return attached, sorted(name.removeprefix("remat:") for name in by_name)


def sweep_offloads_optimizer(config: dict | None) -> bool:
    """Whether a sweep's recorded base config has the optimizer state on the host."""
    return bool((config or {}).get("optimizer_offload"))


def _with_row(remedy: Remedy, row: SweepRow, base_flops: int | None) -> Remedy:
    flops = row.total_flops
    extra = None if flops is None or base_flops is None else int(flops) - base_flops
    return dataclasses.replace(remedy, compiled_bytes=row.required_bytes,
                               compiled_fits=row.fits, compiled_extra_flops=extra)


COMPILED_ONLY_NOTE = ("remedies come from compiling the candidates (your step's remat variants): "
                      "the closed-form predictions are the built-in model's, so none is made; "
                      "a remedy's bytes and extra FLOPs are its compiled program's")


def compiled_remedies(rows: list[SweepRow], base_flops: int | None) -> list[Remedy]:
    """A user step's remedies (`hloscope oom --step`): one per compiled variant, its figures
    the compiled program's (predicted = compiled: there is no closed form of the user's
    model). Variants that compiled nothing are left out."""
    remedies = []
    for row in rows:
        if row.required_bytes is None:
            continue
        flops = row.total_flops
        extra = 0 if flops is None or base_flops is None else int(flops) - base_flops
        fraction = None if not base_flops or flops is None else extra / base_flops
        remedies.append(Remedy(f"remat:{row.variant}", f"remat policy {row.variant}",
                               row.required_bytes, extra, fraction, "compiled",
                               compiled_bytes=row.required_bytes, compiled_fits=row.fits,
                               compiled_extra_flops=None if flops is None else extra))
    return remedies
