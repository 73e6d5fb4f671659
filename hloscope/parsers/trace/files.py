"""Finding and reading a profile: a folder, an `*.xplane.pb` or a `*.trace.json.gz`.

`load_trace` accepts
- an `*.xplane.pb` (or `.xplane.pb.gz`) file: read with the project's XSpace schema;
- a `*.trace.json` / `*.trace.json.gz` file: the JSON fallback (no embedded HLO); any other
  `*.json(.gz)` is read as trace JSON too (xprof's export, a PyTorch Kineto trace: the latter
  to be refused for what it is);
- a folder: `hloscope profile`'s output (its `trace/`), a `jax.profiler.trace` log dir
  (`plugins/profile/<run>/`) or a run folder itself. The newest run is read; in it the XSpace
  is preferred and the trace JSON is the fallback when there is none.

The XLA dump that belongs to a `hloscope profile` folder is found by the loader
(`hloscope.formats.profile.find_dump_folder`).
"""
from __future__ import annotations

from pathlib import Path

from hloscope.errors import InputError
from hloscope.model.trace import Trace
from hloscope.parsers.trace.trace_json import read_trace_json
from hloscope.parsers.trace.xplane import read_xplane

XPLANE_SUFFIXES = (".xplane.pb", ".xplane.pb.gz")
JSON_SUFFIXES = (".trace.json", ".trace.json.gz")
ANY_JSON = (".json", ".json.gz")


def load_trace(source: str | Path, prefer_json: bool = False) -> Trace:
    """The Trace of a file or folder (see the module docstring). InputError when none found."""
    path = Path(source)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if path.is_dir():
        path = find_trace_file(path, prefer_json)
    if path.name.endswith(XPLANE_SUFFIXES):
        return read_xplane(path)
    if path.name.endswith(JSON_SUFFIXES + ANY_JSON):
        return read_trace_json(path)
    raise InputError(f"{path}: not a profile file: expected a name ending in "
                     f"{', '.join(XPLANE_SUFFIXES + JSON_SUFFIXES)} (or .json, .json.gz)")


def find_trace_file(folder: Path, prefer_json: bool = False) -> Path:
    """The XSpace (else the trace JSON) of the newest run under `folder`."""
    runs = sorted({p.parent for suffix in XPLANE_SUFFIXES + JSON_SUFFIXES
                   for p in folder.rglob(f"*{suffix}")}, key=lambda run: run.name)
    if not runs:
        raise InputError(f"{folder}: no profile in this folder (no *.xplane.pb or "
                         "*.trace.json.gz under it)")
    run = runs[-1]
    order = (JSON_SUFFIXES + XPLANE_SUFFIXES) if prefer_json else (XPLANE_SUFFIXES +
                                                                  JSON_SUFFIXES)
    for suffix in order:
        found = sorted(run.glob(f"*{suffix}"))
        if found:
            return found[0]
    raise InputError(f"{run}: no profile file")  # unreachable: the run came from a match


def xspace_beside(trace_json: Path) -> Path | None:
    """The XSpace of the same capture beside a trace JSON: `<host>.xplane.pb` next to
    `<host>.trace.json.gz` (jax.profiler's run folder) or `<host>.<anything>.json.gz` (an
    export named after its capture); None when there is none. It embeds the programs' HLO the
    JSON lacks."""
    host = trace_json.name.split(".")[0]
    for suffix in XPLANE_SUFFIXES:
        candidate = trace_json.with_name(host + suffix)
        if candidate.is_file():
            return candidate
    return None
