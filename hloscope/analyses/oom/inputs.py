"""What `hloscope oom` reads: a module, XLA's dumps, a log, a build's manifest.

The input is an HLO file, an XLA dump folder (also one a failed compile left behind: the
after-optimizations module, buffer assignment and memory-usage report libtpu writes before it
gives up), or a `hloscope build` folder, whose manifest adds the model config, the remat policy,
the target (so the device and its count are known) and the compiler's error text.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hloscope.errors import InputError
from hloscope.model.module import HloModule
from hloscope.parsers.compile_log import CompileLog, parse_compile_log, read_compile_log
from hloscope.parsers.load import BUILD_MANIFEST as MANIFEST
from hloscope.parsers.load import load_input
from hloscope.spec.config import TransformerConfig


@dataclass(frozen=True)
class OomInputs:
    module: HloModule
    dump_source: str | None  # where XLA's memory files are looked up (None: HLO text alone)
    log: CompileLog | None
    config: TransformerConfig | None = None
    target: str | None = None  # e.g. "tpu:v5e:2x2"
    device: str | None = None  # the target's device name, e.g. "v5e"
    devices: int | None = None  # devices the program is partitioned over
    variant: str | None = None


def read_inputs(source: str, module_name: str | None, log_path: Path | None) -> OomInputs:
    path = Path(source)
    if source != "-" and path.is_dir() and (path / MANIFEST).exists():
        return _build_inputs(path, module_name, log_path)
    module = load_input("-" if source == "-" else path, module_name)
    log = read_compile_log(log_path) if log_path is not None else None
    return OomInputs(module, None if source == "-" else source, log,
                     devices=module.num_partitions)


def _build_inputs(folder: Path, module_name: str | None, log_path: Path | None) -> OomInputs:
    from hloscope.spec.targets import parse_target
    from hloscope.workloads.build import DUMP, LOG, load_build

    build = load_build(folder)
    dump = folder / DUMP
    if build.hlo_path is None and not dump.is_dir():
        raise InputError(f"{folder}: the build has no optimized HLO and no dump folder")
    module = load_input(dump if dump.is_dir() else build.hlo_path, module_name)
    texts = [build.manifest.get("error") or ""]
    log_file = log_path or folder / LOG
    if log_file.exists():
        texts.append(log_file.read_text(errors="replace"))
    target = parse_target(build.manifest["target"])
    return OomInputs(module, str(dump if dump.is_dir() else build.hlo_path),
                     parse_compile_log("\n".join(texts), str(log_file)), build.config,
                     target.spec, target.device.name, target.num_devices,
                     build.manifest.get("variant"))
