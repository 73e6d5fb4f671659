"""Every figure of `hloscope.calibration` names where it comes from and what checks it, and
those names are real: each committed file it cites exists, each test it cites is defined in
that file, and docs/calibration.md lists the figure. The truth is the repository itself."""
from __future__ import annotations

import ast
import re
from types import ModuleType

import pytest
from conftest import REPO

from hloscope.calibration import DATASHEET, DEFAULT, FIT, MEASURED, XLA, Figure, cpu, gpu, tpu

KINDS = {DATASHEET, DEFAULT, FIT, MEASURED, XLA}
CITED_PATH = re.compile(r"\b((?:benchmarks|tests|fixtures)/[\w./-]+?)(?:::(\w+))?(?=[\s,;:)'\"]|$)")
DOCS = (REPO / "docs" / "calibration.md").read_text()


def figures(module: ModuleType) -> dict[str, Figure]:
    named: dict[str, Figure] = {}
    for name, value in vars(module).items():
        if isinstance(value, Figure):
            named[name] = value
        elif isinstance(value, dict) and value and all(isinstance(v, Figure)
                                                        for v in value.values()):
            named.update({f"{name}[{key}]": figure for key, figure in value.items()})
    return named


EVERY = {f"{module.__name__.rpartition('.')[2]}.{name}": figure
         for module in (tpu, gpu, cpu) for name, figure in figures(module).items()}


def test_every_backend_has_figures_and_the_citations_are_read() -> None:
    assert {name.partition(".")[0] for name in EVERY} == {"tpu", "gpu", "cpu"}
    cited = [match for figure in EVERY.values()
             for match in CITED_PATH.findall(figure.source + " " + figure.checked_by)]
    assert len(cited) >= 15 and sum(bool(function) for _, function in cited) >= 8


@pytest.mark.parametrize("name", sorted(EVERY))
def test_a_figure_says_what_it_is_and_where_it_comes_from(name: str) -> None:
    figure = EVERY[name]
    assert figure.kind in KINDS
    assert figure.source.strip() and figure.checked_by.strip()
    if figure.kind == FIT:  # a fit is checked on something, or says it is not
        assert "/" in figure.checked_by or figure.checked_by.startswith("unchecked")


def _defined(path: str) -> set[str]:
    tree = ast.parse((REPO / path).read_text())
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}


@pytest.mark.parametrize("name", sorted(EVERY))
def test_what_a_figure_cites_exists(name: str) -> None:
    figure = EVERY[name]
    for text in (figure.source, figure.checked_by):
        for path, function in CITED_PATH.findall(text):
            assert (REPO / path).exists(), f"{name} cites {path}, which is not in the repository"
            if function:
                assert function in _defined(path), f"{name} cites {path}::{function}"


@pytest.mark.parametrize("name", sorted(EVERY))
def test_docs_list_every_figure(name: str) -> None:
    bare = name.partition(".")[2].partition("[")[0]
    assert f"`{bare}`" in DOCS, f"docs/calibration.md does not list {bare}"
