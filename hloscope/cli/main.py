"""The `hloscope` click group, and the mapping from errors to exit codes.

Exit codes: 0 ok; 1 a check failed; 2 usage error (click's and ours); 3 input missing or
unreadable; 4 input malformed; 5 an optional dependency missing (jax for a compile); 6 a
profile with no XLA program (TensorFlow without XLA, PyTorch); 7 a profile whose programs' HLO
is not at hand (`trace` names them); 70
internal error (EX_SOFTWARE from sysexits.h: a bug in hloscope, not in the input); 130
interrupted; 141 stdout closed early (`hloscope ... | head`).

A user error (any HloscopeError) prints `error: <message>` on stderr, never a traceback; a
ParseError's message already reads `file:line:col: error: ...` and is printed as it is. An
unexpected exception prints one line and a hint to report the bug; HLOSCOPE_DEBUG=1 adds the
traceback. The mapping lives in the group's `main`, so click's CliRunner exercises it too.

Subcommands are thin modules `hloscope/cli/<name>.py` that define `command` (a click.Command);
registering one is adding its module name to COMMAND_MODULES.
"""
from __future__ import annotations

import functools
import importlib
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

import click

from hloscope.errors import EXIT_OK, EXIT_USAGE, HloscopeError, ParseError
from hloscope.version import __version__

EXIT_INTERNAL_ERROR = 70
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
DEBUG_VARIABLE = "HLOSCOPE_DEBUG"

COMMAND_MODULES: tuple[str, ...] = ("inspect", "flops", "remat", "memory", "build", "sweep",
                                      "profile", "trace", "oom", "report", "compare",
                                      "snapshot", "check", "policies")
"""Modules under hloscope.cli that each define `command`, e.g. ("inspect", "flops")."""


class HloscopeGroup(click.Group):
    """A click group whose `main` turns every error into a message and an exit code."""

    def main(self, args: Any = None, prog_name: str | None = None,  # type: ignore[override]
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> int:
        invoke = functools.partial(super().main, args, prog_name, complete_var,
                                   standalone_mode=False, **extra)
        code = run_mapped(invoke)
        if standalone_mode:
            sys.exit(code)
        return code

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            _silence_stdout()
            raise click.exceptions.Exit(EXIT_BROKEN_PIPE) from None


def run_mapped(invoke: Callable[[], Any]) -> int:
    """Runs a non-standalone click invocation and returns the exit code its outcome maps to."""
    try:
        result = invoke()
    except HloscopeError as error:
        click.echo(user_message(error), err=True)
        return error.exit_code
    except click.ClickException as error:
        error.show()
        return EXIT_USAGE
    except click.Abort:
        click.echo("error: interrupted", err=True)
        return EXIT_INTERRUPTED
    except Exception as error:  # the last line of defence: no traceback for users
        _report_bug(error)
        return EXIT_INTERNAL_ERROR
    return result if type(result) is int else EXIT_OK


def user_message(error: HloscopeError) -> str:
    if isinstance(error, ParseError):
        return str(error)
    return f"error: {str(error) or type(error).__name__}"


def _report_bug(error: Exception) -> None:
    if os.environ.get(DEBUG_VARIABLE):
        traceback.print_exception(error, file=sys.stderr)
    summary = " ".join(str(error).split()) or "(no message)"
    click.echo(f"error: internal error: {type(error).__name__}: {summary}", err=True)
    click.echo("hint: this is a bug in hloscope; please report it with the command you ran "
               f"({DEBUG_VARIABLE}=1 shows the traceback)", err=True)


def _silence_stdout() -> None:
    """Points stdout at /dev/null so the interpreter's final flush does not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)


@click.group(cls=HloscopeGroup, context_settings={"help_option_names": ["-h", "--help"],
                                                  "max_content_width": 100})
@click.version_option(__version__, "-V", "--version", prog_name="hloscope",
                      message="%(prog)s %(version)s")
def cli() -> None:
    """Explain XLA programs: FLOPs, rematerialization, peak memory, OOMs, diffs and CI gates.

    Commands that read HLO accept an HLO text file, a .gz file, an XLA dump folder or - for
    standard input. Exit codes: 0 ok, 1 check failed, 2 usage error, 3 input missing,
    4 input malformed, 5 a dependency missing (pip install 'hloscope[tpu]' for compiles),
    6 a profile with no XLA program, 7 a profile whose programs' HLO is not at hand.
    """


def _register_commands(group: click.Group) -> None:
    for name in COMMAND_MODULES:
        group.add_command(importlib.import_module(f"hloscope.cli.{name}").command)


_register_commands(cli)


def main() -> None:
    """The console-script entry point (`hloscope`)."""
    cli.main(prog_name="hloscope")
