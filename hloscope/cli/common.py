"""Options the subcommands share, and `emit`, the one way a command writes its report.

    @click.command("inspect")
    @hlo_input()                     # argument HLO (path, folder, .gz or -) and --module NAME
    @output_options                  # --format, -o/--output FILE, --force
    def command(hlo: HloInput, fmt: str, output: Path | None, force: bool) -> None:
        emit(inspect_report(inspect(hlo.load())), fmt, output, force)

Text is the short view by default: at most `DEFAULT_WIDTH` columns (less on a narrower terminal:
`terminal_width`), long cells cut and columns hidden where a table is still too wide, detail
tables and columns left out. `--details` (every command that prints a report) shows them all,
fitting only a terminal's width (a pipe is then never cut); `--wide` shows every column and
whole cells of the short view. A file (`-o FILE`) holds everything, never cut.

`output_options` resolves the format (an explicit --format wins, else -o's suffix, else text) and
refuses an existing -o FILE without --force before the command runs, so a long analysis never
ends in a refusal. HLO input is only collected here; `HloInput.load()` calls the loader lazily.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from hloscope.reports.output import check_writable, write_report
from hloscope.reports.registry import DEFAULT_FORMAT, describe_formats, format_names, resolve_format
from hloscope.reports.report import Report

if TYPE_CHECKING:
    from hloscope.loader.program import Program
    from hloscope.model.module import HloModule

CommandFunction = TypeVar("CommandFunction", bound=Callable[..., Any])
Rewrapped = Callable[..., Any]
"""A command function wrapped by a decorator that takes other keywords than it passes on (the
options it adds in, the values it makes out): not the type it was given."""


def output_options(command: Callable[..., Any]) -> Rewrapped:
    """Adds --format, -o/--output and --force; passes `fmt` (a format name), `output`, `force`."""

    @functools.wraps(command)
    def checked(*args: Any, fmt: str | None, output: Path | None, force: bool,
                **kwargs: Any) -> Any:
        output = None if output is not None and str(output) == "-" else output
        resolved = resolve_format(fmt, output).name
        check_writable(output, force)
        return command(*args, fmt=resolved, output=output, force=force, **kwargs)

    checked = click.option("--force", is_flag=True,
                           help="Overwrite the -o file if it exists.")(checked)
    checked = wide_option(checked)
    checked = click.option("-o", "--output", metavar="FILE", default=None,
                           type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
                           help="Write the report to FILE instead of standard output.")(checked)
    checked = click.option("--format", "fmt", default=None,
                           type=click.Choice(format_names(), case_sensitive=False),
                           help=f"Output format: {describe_formats()}. Default: {DEFAULT_FORMAT}, "
                                "or the one -o FILE's suffix names.")(checked)
    return checked


DEFAULT_WIDTH = 120
"""The most columns default text output takes, whatever the terminal or pipe."""


def emit(report: Report, fmt: str | None, output: Path | None, force: bool) -> None:
    """Writes `report` as `fmt` (None: inferred from `output`) to `output` or stdout; text is
    the short view unless --details (see the module's docstring)."""
    whole = click.get_current_context(silent=True) is None or output is not None  # a file
    details = whole or _flag(DETAILS_KEY)
    write_report(report, resolve_format(fmt, output), output, force,
                 _width(whole or _flag(WIDE_KEY), details), details)


def _width(wide: bool, details: bool) -> int | None:
    if wide:
        return None
    if details:
        return terminal_width()
    return min(terminal_width() or DEFAULT_WIDTH, DEFAULT_WIDTH)


WIDE_KEY = "hloscope.wide"
DETAILS_KEY = "hloscope.details"


def wide_option(command: CommandFunction) -> CommandFunction:
    """Adds --wide (text: every column and whole cells, whatever the terminal) and --details
    (text: the detail tables and columns too)."""
    command = _flag_option("--details", DETAILS_KEY,
                           "Text: also show the detail (per-name tables, buffers at the peak, "
                           "every column), fitting only a terminal's width. JSON and HTML always "
                           "hold it.")(command)
    return _flag_option("--wide", WIDE_KEY,
                        f"Text: show every column and whole cells (default: fit "
                        f"{DEFAULT_WIDTH} columns, or a narrower terminal).")(command)


def _flag_option(name: str, key: str, text: str) -> Callable[[CommandFunction], CommandFunction]:
    def remember(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
        ctx.meta[key] = value
        return value

    return click.option(name, is_flag=True, expose_value=False, callback=remember, help=text)


def _flag(key: str) -> bool:
    return bool(click.get_current_context().meta.get(key))


def terminal_width() -> int | None:
    """The width text output must fit: $COLUMNS when set (a positive number), else the size of
    the terminal standard output is; None (no limit) when standard output is not a terminal."""
    import os
    import shutil
    import sys

    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size().columns


@dataclass(frozen=True, slots=True)
class HloInput:
    """Where a command reads HLO from: a path (file, .gz, dump folder) or "-" for stdin."""

    source: str
    module: str | None = None
    lenient: bool = False

    def load(self) -> HloModule:
        """Loads the selected module (InputError exit 3, ParseError exit 4)."""
        return self.program().module

    def program(self, log_path: Path | None = None) -> Program:
        """Loads the selected module with what lies beside it (`hloscope.loader.Program`)."""
        from hloscope.loader.program import load_program

        return load_program("-" if self.source == "-" else Path(self.source), self.module,
                            log_path, self.lenient)


LENIENT_HELP = ("Skip the semantic checks XLA's parser makes (undefined names, operand counts, "
                "attributes an opcode does not take, literal ranges, ...) for a hand-edited "
                "module; syntax and truncation errors are still reported.")


def lenient_option(command: CommandFunction) -> CommandFunction:
    """Adds --lenient, passed as `lenient` (see LENIENT_HELP)."""
    return click.option("--lenient", is_flag=True, help=LENIENT_HELP)(command)


def hlo_input(*names: str) -> Callable[[Callable[..., Any]], Rewrapped]:
    """Adds one HLO argument per name (default "hlo"), --module NAME and --lenient, and passes each
    as an `HloInput` keyword of that name. Both options apply to every input (e.g. diff's two)."""
    arguments = names or ("hlo",)

    def decorate(command: Callable[..., Any]) -> Rewrapped:
        @functools.wraps(command)
        def collected(*args: Any, module: str | None, lenient: bool, **kwargs: Any) -> Any:
            for name in arguments:
                kwargs[name] = HloInput(kwargs[name], module, lenient)
            return command(*args, **kwargs)

        collected = lenient_option(collected)
        collected = click.option("--module", metavar="NAME", default=None,
                                 help="In a dump folder or multi-module file, read this module "
                                      "(module name, file name or program id).")(collected)
        for name in reversed(arguments):
            collected = click.argument(name, metavar=name.upper())(collected)
        return collected

    return decorate
