"""libtpu's INFO log of the compile that made a build folder.

hloscope's TPU compiles ask libtpu for its INFO lines on stderr (`workloads/runner.py`), so the
build's compile.log holds them; builds made before that did only have them in libtpu's own
file, /tmp/tpu_logs/tpu_driver.*INFO*.<pid>, where <pid> is the compile process's (compile.log's
first log line, `I1125 05:04:27.306411    3103 file.cc:619] ...`).
"""
from __future__ import annotations

import re
from pathlib import Path

from hloscope.formats.compile_record import LOG_FILE
from hloscope.parsers.libtpu_log import SCHEDULER_LINE

LOG_DIR = Path("/tmp/tpu_logs")
_PID = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+(\d+) ", re.M)


def libtpu_log_text(folder: Path, log_dir: Path = LOG_DIR) -> str | None:
    """The INFO log of the compile that made `folder`; None when it is in neither place."""
    path = Path(folder) / LOG_FILE
    text = path.read_text(errors="replace") if path.exists() else ""
    if SCHEDULER_LINE in text:
        return text
    match = _PID.search(text)
    files = sorted(log_dir.glob(f"tpu_driver.*INFO*.{match.group(1)}")) if match else []
    logs = (f.read_text(errors="replace") for f in files)
    return next((log for log in logs if SCHEDULER_LINE in log), None)
