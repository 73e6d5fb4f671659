"""The Python API behind `hloscope/__init__.py`: the analyses a command runs, on a loaded module.

Each function returns the result object the CLI renders; every result has `.to_dict()` (the
JSON document of `--format json`, without its "schema" key) and `.to_pandas()` (one DataFrame
per table, see `hloscope.frames`). A `module` argument is an `HloModule` from `load()` or
`from_jax()`, or anything `load()` takes (a path, a dump folder, HLO text).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hloscope.analyses.cost import CostOptions
from hloscope.analyses.cost.flops import BREAKDOWNS, DEFAULT_SCOPE_DEPTH, FlopsResult
from hloscope.analyses.memory.analysis import MemoryResult
from hloscope.errors import UsageError
from hloscope.model.module import HloModule
from hloscope.parsers.load import load_input

if TYPE_CHECKING:
    from hloscope.analyses.gate.compare import CompareResult
    from hloscope.analyses.oom import OomDiagnosis

ModuleLike = HloModule | str | Path


def as_module(module: ModuleLike) -> HloModule:
    """`module` itself, or the module `load()` reads from a path or text."""
    return module if isinstance(module, HloModule) else load_input(module)


def flops(module: ModuleLike, by: str | Sequence[str] | None = None,
          scope_depth: int = DEFAULT_SCOPE_DEPTH, xla_conventions: bool = False) -> FlopsResult:
    """FLOPs, transcendentals and bytes with loop trip counts applied, by opcode, scope, layer
    and phase. `by` keeps only those breakdowns (one name: `to_pandas()` is that one frame);
    `xla_conventions` counts loop bodies once, as XLA's cost_analysis() does."""
    from hloscope.analyses.cost.flops import flops as analyse

    options = CostOptions.like_xla() if xla_conventions else None
    result = analyse(as_module(module), scope_depth=scope_depth, options=options)
    if by is None:
        return result
    wanted = [by] if isinstance(by, str) else list(by)
    unknown = [name for name in wanted if name not in BREAKDOWNS]
    if unknown:
        raise UsageError(f"unknown breakdown {unknown[0]!r}; choose from {', '.join(BREAKDOWNS)}")
    return dataclasses.replace(result, breakdowns={name: result.rows(name) for name in wanted})


def memory(module: ModuleLike, backend: str | None = None,
           scope_depth: int = 2) -> MemoryResult:
    """The live peak of a scheduled module, the buffers live at it and the timeline; when the
    module was read from an XLA dump (or made by `from_jax`), XLA's own live-range peak and
    allocation too (`result.xla`)."""
    from hloscope.analyses.memory.analysis import memory as analyse
    from hloscope.analyses.memory.analysis import xla_figures
    from hloscope.analyses.memory.liveness.spaces import detect_backend

    loaded = as_module(module)
    backend = backend or detect_backend(loaded)
    xla = xla_figures(loaded.source, None, backend) if _is_file(loaded.source) else None
    return analyse(loaded, backend=backend, xla=xla, scope_depth=scope_depth)


def oom(module: ModuleLike, device: str | None = None, capacity: int | str | None = None,
        log: str | Path | None = None) -> OomDiagnosis:
    """Why the program does (or does not) fit one device: the verdict, what is live at the
    peak, and remedies. `device` (v5e, h100, ...) or `capacity` (bytes, or "16GiB") sets what it
    is judged against; `log` is a compile log file. A module from `from_jax` brings its target
    and the compiler's verdict (an OOM's error text)."""
    from hloscope.analyses.oom import OomInputs, diagnose, resolve_capacity
    from hloscope.devices import check_device_or_capacity
    from hloscope.parsers.compile_log import read_compile_log
    from hloscope.units import parse_bytes
    from hloscope.workloads.capture_folder import read_capture

    check_device_or_capacity(device, capacity)
    loaded = as_module(module)
    captured = read_capture(loaded)
    compile_log = read_compile_log(log) if log is not None else (
        captured.compile_log() if captured else None)
    inputs = OomInputs(loaded, loaded.source if _is_file(loaded.source) else None, compile_log,
                       target=captured.target if captured else None,
                       device=captured.device if captured else None,
                       devices=loaded.num_partitions)
    given = parse_bytes(capacity) if isinstance(capacity, str) else capacity
    resolved = resolve_capacity(given, device, compile_log, inputs.device)
    return diagnose(inputs, resolved)


def compare(a: ModuleLike, b: ModuleLike, device: str | None = None) -> CompareResult:
    """What differs between two programs, B against A: the headline figures with their deltas,
    opcodes, FLOPs by scope, layer and phase, and the buffers live at the peak that appear,
    disappear or change (matched by op_name and shape). `device` adds a step-time estimate."""
    from hloscope.analyses.gate.compare import compare as compare_modules
    from hloscope.devices import get_device

    target = get_device(device) if device is not None else None
    return compare_modules(as_module(a), as_module(b), target)


def report(*inputs: ModuleLike, output: str | Path | None = None, force: bool = False,
           title: str | None = None) -> str:
    """The self-contained HTML report of one or more modules, dump folders, build folders or a
    sweep folder (what `hloscope report` writes); written to `output` when given (an existing
    file only with `force`). Returns the HTML."""
    from hloscope.reports.html_inputs import page_for
    from hloscope.reports.output import write_file
    from hloscope.reports.renderers.html_page import render_page

    if not inputs:
        raise UsageError("report needs at least one input")
    html = render_page(page_for(list(inputs), title=title))
    if output is not None:
        write_file(output, html, force)
    return html


def _is_file(source: str) -> bool:
    if not source or source.startswith("<") or "\n" in source:
        return False
    return Path(source).is_file()


def from_jax(fn: Any, *args: Any, target: str = "cpu", policy: Any = None,
             dump_dir: str | Path | None = None, **jit_kwargs: Any) -> HloModule:
    """Compiles `fn(*args)` for `target` and returns its optimized module (see
    `hloscope.workloads.capture.from_jax`)."""
    from hloscope.workloads.capture import from_jax as capture

    return capture(fn, *args, target=target, policy=policy, dump_dir=dump_dir, **jit_kwargs)
