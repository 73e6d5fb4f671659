"""The folder `hloscope.from_jax` compiles into, and what it records there.

    capture.json   hloscope/capture/v1: what was compiled (function, target, in-process or not),
                   the verdict (ok / oom / error / crash / timeout, with XLA's error text) and the
                   compile record
    dump/          XLA's dump folder: the optimized HLO and the memory files
    compile.log    the compile process's output (subprocess compiles)

An OOM is a result: libtpu writes the program it could not fit before it gives up, so the module
loads and `hloscope.oom` explains it, with the compiler's message read from here.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hloscope.formats.compile_record import DUMP_FOLDER, LOG_FILE
from hloscope.formats.json_text import read_json
from hloscope.parsers.compile_log import CompileLog, parse_compile_log

CAPTURE_SCHEMA = "hloscope/capture/v1"
CAPTURE_FILE = "capture.json"
_FIELDS = ("folder", "function", "target", "status", "error", "in_process")


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
        from hloscope.configs.targets import parse_target

        return parse_target(self.target).device_name

    @property
    def dump(self) -> Path:
        return capture_dump(Path(self.folder))

    @property
    def log_path(self) -> Path:
        return capture_log(Path(self.folder))

    def compile_log(self) -> CompileLog:
        """The compiler's messages: the error text, then the child's log."""
        log = self.log_path
        texts = [self.error or "", log.read_text(errors="replace") if log.exists() else ""]
        return parse_compile_log("\n".join(texts), str(log))

    def to_dict(self) -> dict[str, Any]:
        return {"schema": CAPTURE_SCHEMA, **asdict(self)}


def capture_dump(folder: Path) -> Path:
    """Where XLA dumps the program `from_jax` compiles into `folder`."""
    return folder / DUMP_FOLDER


def capture_log(folder: Path) -> Path:
    return folder / LOG_FILE


def write_capture(info: CaptureInfo, compiled: dict[str, Any]) -> None:
    path = Path(info.folder) / CAPTURE_FILE
    path.write_text(json.dumps({**info.to_dict(), "compile": compiled}, indent=2) + "\n")


def find_capture(hlo_file: Path) -> CaptureInfo | None:
    """What `from_jax` recorded for the module read from `hlo_file` (in its dump/), or None."""
    if hlo_file.parent.name != DUMP_FOLDER:
        return None
    return read_capture(hlo_file.parent.parent)


def read_capture(folder: Path) -> CaptureInfo | None:
    """The capture.json of `folder`; None when absent, unreadable or of another schema."""
    data = read_json(folder / CAPTURE_FILE)
    if not isinstance(data, dict) or data.get("schema") != CAPTURE_SCHEMA:
        return None
    fields: dict[str, Any] = {name: data.get(name) for name in _FIELDS}  # as the JSON has them
    return CaptureInfo(**fields)
