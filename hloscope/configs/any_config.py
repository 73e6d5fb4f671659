"""`AnyConfig`: either kind of config itself, the built-in model's `TransformerConfig` or a user
step's `StepConfig`, where code is given one and tells them apart (`isinstance`). Code that only
changes what variants and grid points change takes the protocol of `spec.config_kind`."""
from __future__ import annotations

from typing import TypeAlias

from hloscope.configs.config import TransformerConfig
from hloscope.configs.step import StepConfig

AnyConfig: TypeAlias = TransformerConfig | StepConfig

__all__ = ["AnyConfig"]
