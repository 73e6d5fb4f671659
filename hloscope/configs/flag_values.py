"""What a recorded compile gave one flag (read side of `configs/flags.py`).

Kept apart from `configs/flags.py`: that module's bytes are part of every build's cache key
(`workloads/build.py`, the workload sources), and reading a flag back does not change what is
compiled — an accessor there would have invalidated every cached compile.
"""
from __future__ import annotations

from hloscope.configs.flags import CompileFlags


def flag_value(flags: CompileFlags, name: str) -> str | None:
    """The value the compile gives flag `name` (`--name`): the last one of the recorded
    variables, then of the user's flags, which `CompileFlags.apply` puts after them; None when
    unset."""
    words = [word for value in flags.environment.values() for word in value.split()]
    found = None
    for word in (*words, *flags.user):
        flag, _, value = word.partition("=")
        if flag == name:
            found = value
    return found
