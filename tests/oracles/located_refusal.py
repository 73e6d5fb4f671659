"""A module hloscope's strict load refuses at a given line and column, and `--lenient` loads."""
from __future__ import annotations

import pytest

import hloscope
from hloscope.errors import ParseError


def assert_refused_at(text: str, message: str, line: int, at: str) -> None:
    """Refused with `message` (exit 4) at `line`, where `at` first starts on it (the first
    operand or the attribute's name); the lenient load takes it."""
    with pytest.raises(ParseError) as caught:
        hloscope.load(text)
    assert message in caught.value.message
    assert caught.value.exit_code == 4
    source = text.splitlines()[line - 1]
    assert (caught.value.location.line, caught.value.location.column) == (line,
                                                                          source.index(at) + 1)
    hloscope.load(text, lenient=True)


def line_of(text: str, name: str) -> int:
    """The line defining instruction `%name` (ROOT or not)."""
    return next(n for n, source in enumerate(text.splitlines(), 1)
                if source.lstrip().startswith((f"%{name} =", f"ROOT %{name} =")))
