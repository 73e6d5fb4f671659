"""pandas and notebook views of analysis results: the `DataFrames` and `Rendered` mixins and the
registries of result tables and views.

A result class gets `to_pandas()` from the `DataFrames` mixin; what its frames hold is decided in
the reports layer, which registers a tables factory for the class with `register_tables`:

    @register_tables(FlopsResult)
    def flops_tables(result: FlopsResult) -> list[Table]: ...

This module sits below the analyses (which mix `DataFrames` in) and knows nothing of the reports:
a table is anything with a `name` and a `to_frame()`, and the registry is filled when
`hloscope.reports.tables` is imported (`import hloscope` does it). A result whose class, and
every base class, has no factory raises a TypeError. pandas is imported only when a frame is
made: importing hloscope never imports it.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    import pandas


class FramedTable(Protocol):
    """A table as `to_pandas()` needs it: a name and its rows as one DataFrame."""

    @property
    def name(self) -> str: ...

    def to_frame(self) -> pandas.DataFrame: ...


TablesFactory = Callable[[Any], Sequence[FramedTable]]
Factory = TypeVar("Factory", bound=TablesFactory)
View = Callable[[Any, str], str]
ViewFactory = TypeVar("ViewFactory", bound=View)

_FACTORIES: dict[type, TablesFactory] = {}


def register_tables(result_class: type) -> Callable[[Factory], Factory]:
    """A decorator registering `factory(result) -> tables` for `result_class` (and subclasses)."""
    def register(factory: Factory) -> Factory:
        _FACTORIES[result_class] = factory
        return factory
    return register


def tables_factory(result_class: type) -> TablesFactory:
    """The factory registered for `result_class` or its nearest base class; TypeError if none."""
    for cls in result_class.__mro__:
        factory = _FACTORIES.get(cls)
        if factory is not None:
            return factory
    raise TypeError(f"no tables are registered for {result_class.__name__} "
                    "(hloscope.reports.tables registers them)")


def result_tables(result: Any) -> Sequence[FramedTable]:
    """The tables of `result`, untruncated."""
    return tables_factory(type(result))(result)


_VIEWS: dict[type, View] = {}


def register_view(result_class: type) -> Callable[[ViewFactory], ViewFactory]:
    """A decorator registering `view(result, kind) -> str` for `result_class` (and subclasses):
    the result as "html" (a fragment: tables and charts) or "markdown". The reports layer fills
    it (`hloscope.reports.notebook`), as it fills the tables registry."""
    def register(view: ViewFactory) -> ViewFactory:
        _VIEWS[result_class] = view
        return view
    return register


def result_view(result: Any, kind: str) -> str | None:
    for cls in type(result).__mro__:
        view = _VIEWS.get(cls)
        if view is not None:
            return view(result, kind)
    return None


class Rendered:
    """How Jupyter (and IPython) shows a result: `_repr_html_` (the report's tables and charts,
    as `hloscope report` draws them) and `_repr_markdown_` for front ends without HTML. None
    (Jupyter then falls back to repr) when no view is registered."""

    __slots__ = ()

    def _repr_html_(self) -> str | None:
        return result_view(self, "html")

    def _repr_markdown_(self) -> str | None:
        return result_view(self, "markdown")


class DataFrames(Rendered):
    """Adds `to_pandas()` to a result class (slotted dataclasses too: no state of its own), and
    the notebook views of `Rendered`."""

    __slots__ = ()

    def to_pandas(self) -> pandas.DataFrame | dict[str, pandas.DataFrame]:
        """One DataFrame per table: a dict name -> frame, or the frame when there is one."""
        return to_pandas(self)


def to_pandas(result: Any) -> pandas.DataFrame | dict[str, pandas.DataFrame]:
    frames = {table.name: table.to_frame() for table in result_tables(result)}
    if len(frames) == 1:
        return next(iter(frames.values()))
    return frames
