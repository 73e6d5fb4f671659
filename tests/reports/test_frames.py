"""The to_pandas() registry: result classes get their tables from the reports layer."""
from __future__ import annotations

import ast
from dataclasses import dataclass

import pandas
import pytest
from conftest import REPO

import hloscope
from hloscope.dataframes import DataFrames, register_tables, result_tables, tables_factory
from hloscope.reports.report import Column, Quantity, Table


@dataclass
class _Unregistered(DataFrames):
    value: int = 1


@dataclass
class _Base(DataFrames):
    value: int = 1


class _Derived(_Base):
    pass


@register_tables(_Base)
def _base_tables(result: _Base) -> list[Table]:
    return [Table("values", "Values", [Column("value", "value", "bytes"), Column("name", "name")],
                  [{"value": result.value, "name": "a"}, {"value": Quantity(2, "bytes")}])]


def test_a_result_without_tables_is_a_clear_type_error() -> None:
    with pytest.raises(TypeError, match="no tables are registered for _Unregistered"):
        _Unregistered().to_pandas()


def test_a_subclass_finds_its_base_class_tables() -> None:
    assert tables_factory(_Derived) is _base_tables
    (table,) = result_tables(_Derived(5))
    assert table.name == "values"
    frame = _Derived(5).to_pandas()
    assert isinstance(frame, pandas.DataFrame)
    assert frame["value"].tolist() == [5, 2] and str(frame["value"].dtype) == "int64"
    assert frame["name"].isna().tolist() == [False, True]


def test_importing_hloscope_registers_every_result() -> None:
    for result_class in (hloscope.InspectResult, hloscope.FlopsResult, hloscope.RematResult,
                         hloscope.MemoryResult):
        assert tables_factory(result_class) is not None


def test_frames_imports_nothing_above_the_foundation() -> None:
    tree = ast.parse((REPO / "hloscope" / "dataframes.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for alias in node.names}
    assert not any(name and name.startswith("hloscope") for name in imported), imported
