"""Writing a rendered report: to stdout, or to a file written atomically and never overwritten
without `force` (the CLI's `--force`).

The file is written to a temporary file beside it and renamed over the target, so a reader never
sees half a report and a failed run leaves an existing file as it was. Commands should call
`check_writable` before their analysis (the CLI's output options do) so that a long run does not
end in a refusal; `write_report` checks again.
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

from hloscope.errors import OutputExistsError, UsageError
from hloscope.reports.registry import STDOUT, OutputFormat, get_format
from hloscope.reports.renderers import text
from hloscope.reports.report import Report


def write_report(report: Report, fmt: str | OutputFormat, path: str | Path | None,
                 force: bool = False, width: int | None = None, details: bool = True) -> None:
    """Renders `report` as `fmt` to stdout (`path` None or "-") or to `path`; text fits `width`
    columns when given and shows its detail only with `details` (`renderers.text`)."""
    output_format = get_format(fmt) if isinstance(fmt, str) else fmt
    if output_format.name == "text":
        rendered = text.render(report, width, details)
    else:
        rendered = output_format.render(report)
    if path is None or str(path) == STDOUT:
        sys.stdout.write(rendered)
        sys.stdout.flush()
        return
    path = Path(path)
    check_writable(path, force)
    _write_atomically(path, rendered)


def write_file(path: str | Path, text: str, force: bool = False) -> None:
    """Writes `text` to `path` atomically; an existing file only with `force`."""
    path = Path(path)
    check_writable(path, force)
    _write_atomically(path, text)


def check_writable(path: str | Path | None, force: bool) -> None:
    """Raises OutputExistsError if `path` exists and not `force`, UsageError if it cannot be one."""
    if path is None or str(path) == STDOUT:
        return
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{path} is a directory; give a file name to -o")
    if path.exists() and not force:
        raise OutputExistsError(f"{path} already exists; pass --force to overwrite it")
    if not path.parent.is_dir():
        raise UsageError(f"{path}: cannot write there: no such directory {path.parent}")


def _write_atomically(path: Path, rendered: str) -> None:
    mode = path.stat().st_mode & 0o777 if path.exists() else _default_file_mode()
    try:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.",
                                             suffix=".tmp")
    except OSError as error:
        raise UsageError(f"{path}: cannot write: {error.strerror or error}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(rendered)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except OSError as error:
        _remove_quietly(temporary)
        raise UsageError(f"{path}: cannot write: {error.strerror or error}") from None
    except BaseException:
        _remove_quietly(temporary)
        raise


def _default_file_mode() -> int:
    """0o666 less the umask: what `open(path, "w")` would have created."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)
