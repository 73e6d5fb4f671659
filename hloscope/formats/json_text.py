"""JSON text as hloscope writes it, and JSON files read without fuss.

`to_jsonable` is the one conversion of results into JSON values: integers stay integers; paths,
enums, tuples, sets and dataclasses become their JSON equivalents; non-finite floats become null,
since JSON has no NaN or Infinity. The report renderer and the format writers share it, so a
document written to a folder is byte for byte what `--format json` prints.
"""
from __future__ import annotations

import dataclasses
import enum
import json
import math
import os
import tempfile
from pathlib import Path, PurePath
from typing import Any


def document_text(schema: str, body: dict[str, Any]) -> str:
    """`{"schema": ..., **body}` as indented JSON text (a `schema` key in body is replaced)."""
    kept = {key: value for key, value in body.items() if key != "schema"}
    return json.dumps({"schema": schema, **to_jsonable(kept)}, indent=2, allow_nan=False) + "\n"


def to_jsonable(value: Any) -> Any:
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(item) for item in value]
    if isinstance(value, set | frozenset):
        return [to_jsonable(item) for item in sorted(value, key=str)]
    return _convert_object(value)


def _convert_object(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value))
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if isinstance(value, PurePath):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def read_json(path: Path) -> Any:
    """The JSON value in `path`, or None when it is missing or not JSON (for discovered files)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None


def read_json_document(path: Path, what: str, missing: str) -> Any:
    """The JSON value of a document the user named: InputError (exit 3) when `path` is missing
    or unreadable (`missing` says what writes one), ParseError (exit 4, with line and column)
    when it is not JSON. `what` names the document in the messages ("baseline", "frontier")."""
    from hloscope.errors import InputError, ParseError, SourceLocation

    if not path.is_file():
        raise InputError(f"{path}: no such {what} file ({missing})")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot read the {what}: {error}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        lines = text.splitlines()
        # A text cut at a line's end fails on the line after its last one.
        line_text = lines[error.lineno - 1] if error.lineno <= len(lines) else ""
        raise ParseError(f"not a readable {what} (invalid JSON: {error.msg})",
                         SourceLocation(str(path), error.lineno, error.colno), line_text) from None


def write_json(path: Path, data: Any) -> None:
    """`data` as indented JSON (the layout of build folders' JSON files)."""
    path.write_text(json.dumps(data, indent=2) + "\n")


def replace_file(path: Path, text: str) -> None:
    """Writes `text` to `path` through a temporary file, so a reader never sees half of it."""
    mode = path.stat().st_mode & 0o777 if path.exists() else _default_file_mode()
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _default_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
