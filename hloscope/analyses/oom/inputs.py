"""What `hloscope oom` judges: a loaded program, and what its build or capture says.

The program is an HLO file, an XLA dump folder (also one a failed compile left behind: the
after-optimizations module, buffer assignment and memory-usage report libtpu writes before it
gives up), a `hloscope build` folder, whose manifest adds the model config, the remat policy, the
target (so the device and its count are known) and the compiler's error text, or a module made by
`from_jax`, whose capture record adds the target and the compiler's verdict. Everything is read
by the loader (`Program`); this module only picks what the diagnosis uses.
"""
from __future__ import annotations

from dataclasses import dataclass

from hloscope.configs.config import TransformerConfig
from hloscope.configs.targets import parse_target
from hloscope.loader.program import Program
from hloscope.model.module import HloModule
from hloscope.parsers.compile_log import CompileLog


@dataclass(frozen=True)
class OomInputs:
    program: Program  # the module, and XLA's memory files beside it
    log: CompileLog | None
    config: TransformerConfig | None = None
    target: str | None = None  # e.g. "tpu:v5e:2x2"
    device: str | None = None  # the target's device name, e.g. "v5e"
    devices: int | None = None  # devices the program is partitioned over
    variant: str | None = None
    num_slices: int = 1  # TPU multislice: slices joined by DCN (devices counts all of them)

    @property
    def module(self) -> HloModule:
        return self.program.module


def oom_inputs(program: Program) -> OomInputs:
    """What the diagnosis of `program` uses: a named build's config and target, else a
    capture's target, else the module alone (with the log the user named)."""
    build = program.given_build
    if build is not None:
        target = parse_target(build.target)
        return OomInputs(program, program.compile_log, build.model_config, target.spec,
                         target.device.name, target.num_devices, build.variant,
                         target.num_slices)
    capture = program.capture
    return OomInputs(program, program.compile_log,
                     target=capture.target if capture else None,
                     device=capture.device if capture else None,
                     devices=program.module.num_partitions)
