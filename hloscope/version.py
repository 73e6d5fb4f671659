"""hloscope's version: the one place it is written.

A leaf (layer 0) so that any module can record the version -- build manifests, profile records,
cache keys -- without importing the package facade; `hloscope.__version__` re-exports it and
pyproject.toml reads it (`[tool.setuptools.dynamic]`).
"""
from __future__ import annotations

__version__ = "0.1.0"
