"""The errors hloscope reports to users, each carrying the exit code the CLI returns.

The CLI prints `str(error)` without a traceback and exits with `error.exit_code`:
0 ok, 1 a check failed, 2 usage error, 3 input missing or unreadable, 4 input malformed,
5 an optional dependency missing (the message names the `pip install 'hloscope[extra]'`),
6 a profile with no XLA program in it (TensorFlow without XLA, a PyTorch trace), 7 a profile
whose XLA programs' HLO is not at hand (the message names the programs and ids missing).
"""
from __future__ import annotations

from dataclasses import dataclass

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_INPUT_MISSING = 3
EXIT_INPUT_MALFORMED = 4
EXIT_MISSING_DEPENDENCY = 5
EXIT_NOT_XLA = 6
EXIT_NO_HLO = 7


class HloscopeError(Exception):
    """Base of every error meant for the user rather than for a developer."""

    exit_code: int = EXIT_USAGE


class UsageError(HloscopeError):
    """A command was called with options that cannot work together (unknown device, ...)."""

    exit_code = EXIT_USAGE


class MissingDependencyError(UsageError):
    """What the command needs is not installed (jax for a compile, matplotlib, Ray, ...); the
    message names the extra to install. A UsageError, with its own exit code so scripts can
    tell "install something" from "called wrongly"."""

    exit_code = EXIT_MISSING_DEPENDENCY


class InputError(HloscopeError):
    """The input does not exist or cannot be read."""

    exit_code = EXIT_INPUT_MISSING


class OutputExistsError(HloscopeError):
    """Refusing to overwrite an existing output file without --force."""

    exit_code = EXIT_USAGE


@dataclass(frozen=True, slots=True)
class SourceLocation:
    """A 1-based line and column in a named input."""

    source: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.source}:{self.line}:{self.column}"


class ParseError(HloscopeError):
    """The input is not well-formed HLO; carries file:line:col, the offending line and a caret."""

    exit_code = EXIT_INPUT_MALFORMED

    def __init__(self, message: str, location: SourceLocation, line_text: str = "") -> None:
        self.message = message
        self.location = location
        self.line_text = line_text
        super().__init__(self._render())

    @classmethod
    def in_text(cls, message: str, source: str, text: str, first_line: int,
                offset: int) -> ParseError:
        """An error at `offset` of `text`, a statement that starts at line `first_line`."""
        newlines = text.count("\n", 0, offset)
        line_start = text.rfind("\n", 0, offset) + 1
        line_end = text.find("\n", offset)
        line_text = text[line_start : line_end if line_end >= 0 else len(text)]
        location = SourceLocation(source, first_line + newlines, offset - line_start + 1)
        return cls(message, location, line_text)

    def _render(self) -> str:
        text = f"{self.location}: error: {self.message}"
        if self.line_text:
            shown, caret_column = _clip_line(self.line_text, self.location.column)
            text += f"\n  {shown}\n  {' ' * (caret_column - 1)}^"
        return text


class NotScheduledError(HloscopeError):
    """An analysis needs a scheduled module (is_scheduled=true) and got an unscheduled one."""

    exit_code = EXIT_INPUT_MALFORMED


def _clip_line(line_text: str, column: int, width: int = 120) -> tuple[str, int]:
    """Shows at most `width` characters of a long line around `column`."""
    line_text = line_text.rstrip("\n")
    if len(line_text) <= width:
        return line_text, max(column, 1)
    start = max(0, min(column - 1 - width // 2, len(line_text) - width))
    prefix = "..." if start else ""
    shown = prefix + line_text[start : start + width]
    return shown, column - start + len(prefix)


class ClusterUnreachableError(HloscopeError):
    """A compute cluster (Ray) named by an address cannot be reached."""

    exit_code = EXIT_INPUT_MISSING


class NotXlaTraceError(InputError):
    """A readable profile that holds no XLA op: nothing in it can be joined to HLO."""

    exit_code = EXIT_NOT_XLA


class MissingHloError(InputError):
    """A profile's XLA programs whose HLO is neither embedded nor given (named with ids)."""

    exit_code = EXIT_NO_HLO
