"""The folder `hloscope.from_jax` compiles into, and what it records there (no jax).

    capture.json   what was compiled (function, target, in-process or not) and the verdict
                   (ok / oom / error / crash / timeout, with XLA's error text)
    dump/          XLA's dump folder: the optimized HLO and the memory files
    compile.log    the compile process's output (subprocess compiles)

An OOM is a result: libtpu writes the program it could not fit before it gives up, so the
module loads and `hloscope.oom` explains it, with the compiler's message read from here.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hloscope.errors import EXIT_INPUT_MALFORMED, HloscopeError
from hloscope.model.module import HloModule
from hloscope.parsers.compile_log import CompileLog, parse_compile_log

CAPTURE_SCHEMA = "hloscope/capture/v1"
CAPTURE_FILE, DUMP, LOG = "capture.json", "dump", "compile.log"


class CaptureError(HloscopeError):
    """The function could not be lowered or compiled (its error, not an OOM)."""

    exit_code = EXIT_INPUT_MALFORMED


@dataclass(frozen=True)
class CaptureInfo:
    folder: str
    function: str
    target: str
    status: str
    error: str | None
    in_process: bool

    @property
    def device(self) -> str:
        """The target's device name (`v5e`, `h100`, `cpu`)."""
        from hloscope.spec.targets import parse_target

        return parse_target(self.target).device_name

    def compile_log(self) -> CompileLog:
        """The compiler's messages: the error text, then the child's log."""
        log = Path(self.folder) / LOG
        texts = [self.error or "", log.read_text(errors="replace") if log.exists() else ""]
        return parse_compile_log("\n".join(texts), str(log))

    def to_dict(self) -> dict[str, Any]:
        return {"schema": CAPTURE_SCHEMA, **asdict(self)}


def write_capture(info: CaptureInfo, compiled: dict[str, Any]) -> None:
    path = Path(info.folder) / CAPTURE_FILE
    path.write_text(json.dumps({**info.to_dict(), "compile": compiled}, indent=2) + "\n")


def read_capture(module: HloModule) -> CaptureInfo | None:
    """What `from_jax` recorded for `module` (None for a module it did not make)."""
    source = Path(module.source) if module.source and not module.source.startswith("<") else None
    if source is None or source.parent.name != DUMP:
        return None
    path = source.parent.parent / CAPTURE_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if data.get("schema") != CAPTURE_SCHEMA:
        return None
    fields = ("folder", "function", "target", "status", "error", "in_process")
    return CaptureInfo(**{name: data.get(name) for name in fields})
