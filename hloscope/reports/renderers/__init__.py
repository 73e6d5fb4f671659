"""Renderers: each module has `render(report) -> str` and only formats; `registry.py` names them."""
