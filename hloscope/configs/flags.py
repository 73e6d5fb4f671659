"""XLA and libtpu flags a user passes to the compile (no jax).

Flags move the fit boundary (a scheduler or remat flag can turn an OOM into a fit), so they are
part of what a build is: recorded in its manifest and hashed into its cache key. Two sources:

- `--xla-flag FLAG` (repeated; the API's `xla_flags=`), e.g.
  `--xla_tpu_enable_latency_hiding_scheduler=true`, or the same without the leading dashes;
- the environment the build is started from: `LIBTPU_INIT_ARGS` (libtpu reads it when it loads;
  MaxText and xpk put their TPU flags there) and `XLA_FLAGS`.

Where they go in the compile's child process: on TPU targets the user's flags are appended to
`LIBTPU_INIT_ARGS`, because the TPU compiler runs inside libtpu and jaxlib refuses `XLA_FLAGS`
it does not know (every `xla_tpu_*` flag); on CPU and GPU targets they are appended to
`XLA_FLAGS`. The environment's values are the ones recorded here, so a build started elsewhere
(a Ray worker) compiles with the flags its manifest names.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hloscope.errors import UsageError

LIBTPU_INIT_ARGS = "LIBTPU_INIT_ARGS"
XLA_FLAGS = "XLA_FLAGS"
FLAG_VARIABLES = (LIBTPU_INIT_ARGS, XLA_FLAGS)
_FLAG = re.compile(r"^--[A-Za-z][A-Za-z0-9_]*(=.*)?$")


def normalise_flag(text: str) -> str:
    """`--name[=value]` from `--name=value`, `name=value` or `-name=value`; UsageError when the
    text is no flag."""
    flag = text.strip()
    flag = "--" + flag.lstrip("-")
    if not _FLAG.match(flag) or " " in flag:
        raise UsageError(f"not an XLA flag: {text!r}; expected --xla_name=value")
    return flag


@dataclass(frozen=True)
class CompileFlags:
    """The user's flags and the flag variables of the environment a build was asked from."""

    user: tuple[str, ...] = ()
    environment: dict[str, str] = field(default_factory=dict)

    @classmethod
    def gather(cls, user: tuple[str, ...] | list[str] = (),
               environ: Mapping[str, str] | None = None) -> CompileFlags:
        """`user` flags (normalised) and the non-empty flag variables of `environ`."""
        given = environ or {}
        found = {name: given[name].strip() for name in FLAG_VARIABLES
                 if given.get(name, "").strip()}
        return cls(tuple(normalise_flag(flag) for flag in user), found)

    @property
    def empty(self) -> bool:
        return not self.user and not self.environment

    def to_dict(self) -> dict[str, Any]:
        """The manifest's and the cache key's record."""
        return {"user": list(self.user), "environment": dict(sorted(self.environment.items()))}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> CompileFlags:
        data = data or {}
        return cls(tuple(data.get("user") or ()), dict(data.get("environment") or {}))

    def apply(self, env: dict[str, str], backend: str) -> dict[str, str]:
        """`env` (a child's environment) with the recorded variables and the user's flags."""
        result = dict(env)
        for name, value in self.environment.items():
            if name == XLA_FLAGS:  # the target's own XLA flags stay, after the recorded ones
                result[name] = _joined(value, _missing(result.get(name, ""), value))
            else:
                result[name] = value
        variable = LIBTPU_INIT_ARGS if backend == "tpu" else XLA_FLAGS
        if self.user:
            result[variable] = _joined(result.get(variable, ""), " ".join(self.user))
        return result


def _missing(current: str, recorded: str) -> str:
    names = {flag.split("=", 1)[0] for flag in recorded.split()}
    return " ".join(f for f in current.split() if f.split("=", 1)[0] not in names)


def _joined(*parts: str) -> str:
    return " ".join(part.strip() for part in parts if part and part.strip())
