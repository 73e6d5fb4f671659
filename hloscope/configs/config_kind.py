"""What a variant and a grid point change in a config of either kind: the built-in model's
`TransformerConfig` (`spec.config`) or a user step's `StepConfig` (`spec.step`).

Both are frozen dataclasses with the remat fields, `batch` and `seq_len`, so a variant's
`apply` and a sweep case's `config` replace those fields on either and give back the same kind
(`ConfigT`). Code that reads the model's shapes (`n_layers`, ...) takes a `TransformerConfig`.
"""
from __future__ import annotations

from dataclasses import Field
from typing import Any, ClassVar, Protocol, TypeVar


class ConfigKind(Protocol):
    """A config of either kind, as variants and grids use it."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @property
    def remat(self) -> str: ...

    @property
    def remat_block(self) -> int: ...

    @property
    def remat_layers(self) -> int | None: ...

    @property
    def batch(self) -> int: ...

    @property
    def seq_len(self) -> int: ...


ConfigT = TypeVar("ConfigT", bound=ConfigKind)
"""The kind a variant or grid point was given, and gives back."""
