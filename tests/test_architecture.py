"""The layering rule of docs/architecture.md, checked from the imports of hloscope/ themselves.

Every import statement counts, wherever it stands (module level, inside a function, under
TYPE_CHECKING): a lazy import still ties the two modules together. The layers are read from the
table in docs/architecture.md, so the document and this test cannot drift apart.
"""
from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from conftest import REPO

PACKAGE = REPO / "hloscope"
ARCHITECTURE = REPO / "docs" / "architecture.md"
JAX_ROOTS = ("jax", "jaxlib", "libtpu", "flax", "equinox")


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str  # a module of hloscope, or the top-level name of a third-party module
    line: int


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str) -> str | None:
    """The hloscope module `name` lands in (a package's `__init__` for a package or attribute)."""
    known = modules()
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _targets(node: ast.Import | ast.ImportFrom, importer: str, is_package: bool) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    if node.level:
        base = importer.split(".")[: len(importer.split(".")) - node.level + (1 if is_package
                                                                             else 0)]
        origin = ".".join(base + ([node.module] if node.module else []))
    else:
        origin = node.module or ""
    for alias in node.names:  # `from pkg import module` imports the module, read from pkg
        candidate = f"{origin}.{alias.name}"
        if candidate in modules():
            yield candidate
        yield origin


@cache
def imports() -> tuple[Import, ...]:
    found = []
    for name, path in modules().items():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _targets(node, name, path.name == "__init__.py"):
                resolved = _resolve(target) if target.startswith("hloscope") else (
                    target.split(".")[0])
                if resolved and resolved != name:
                    found.append(Import(name, resolved, node.lineno))
    return tuple(found)


def internal_imports() -> list[Import]:
    return [edge for edge in imports() if edge.imported.startswith("hloscope")]


@cache
def layers() -> tuple[tuple[int, tuple[str, ...]], ...]:
    """(rank, packages) for each row of the layer table in docs/architecture.md."""
    rows = []
    for line in ARCHITECTURE.read_text().splitlines():
        match = re.match(r"\|\s*(\d+)\s+[\w ]+\|([^|]+)\|", line)
        if match:
            names = tuple(re.findall(r"`(hloscope[\w.]*)`", match.group(2)))
            rows.append((int(match.group(1)), tuple(n.replace(" (__init__)", "") for n in names)))
    return tuple(rows)


def layer_of(module: str) -> int:
    """The rank of the most specific package of the table that holds `module`."""
    best: tuple[int, int] | None = None
    for rank, packages in layers():
        for package in packages:
            exact = package == "hloscope"
            holds = module == package if exact else (
                module == package or module.startswith(package + "."))
            if holds and (best is None or len(package) > best[0]):
                best = (len(package), rank)
    if best is None:
        raise AssertionError(f"{module} is in no layer of {ARCHITECTURE.name}")
    return best[1]


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components with more than one node (the import circles)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in edges.get(node, ()):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return circles


def graph_at_depth(depth: int | None) -> dict[str, set[str]]:
    """Import edges between modules (depth None) or between the packages `depth` names deep."""
    def node(module: str) -> str:
        if depth is None:
            return module
        parts = module.split(".")
        package = parts if module not in _packages() else parts + ["__init__"]
        return ".".join(package[: depth + 1]) if len(package) > depth + 1 else module

    edges: dict[str, set[str]] = defaultdict(set)
    for edge in internal_imports():
        source, target = node(edge.importer), node(edge.imported)
        if source != target:
            edges[source].add(target)
    return edges


@cache
def _packages() -> frozenset[str]:
    return frozenset(name for name, path in modules().items() if path.name == "__init__.py")


def test_every_module_is_in_a_layer() -> None:
    assert layers(), f"no layer table in {ARCHITECTURE}"
    for module in modules():
        layer_of(module)


def test_no_import_runs_up_a_layer() -> None:
    upward = sorted({f"{edge.importer}:{edge.line} imports {edge.imported} "
                     f"(layer {layer_of(edge.importer)} -> {layer_of(edge.imported)})"
                     for edge in internal_imports()
                     if layer_of(edge.imported) > layer_of(edge.importer)})
    assert not upward, "\n".join(upward)


@pytest.mark.parametrize("depth", [None, 1, 2, 3], ids=["modules", "packages", "subpackages",
                                                         "sub-subpackages"])
def test_no_import_circles(depth: int | None) -> None:
    circles = strongly_connected(graph_at_depth(depth))
    assert not circles, "\n".join(" <-> ".join(circle) for circle in circles)


def test_only_workloads_imports_jax() -> None:
    outside = [f"{edge.importer}:{edge.line} imports {edge.imported}" for edge in imports()
               if edge.imported in JAX_ROOTS and not edge.importer.startswith(
                   "hloscope.workloads")]
    assert not outside, "\n".join(outside)


def test_only_the_ray_executor_imports_ray() -> None:
    outside = [f"{edge.importer}:{edge.line}" for edge in imports()
               if edge.imported == "ray" and edge.importer != "hloscope.sweeps.ray_executor"]
    assert not outside, "\n".join(outside)


def test_the_checker_sees_lazy_and_relative_imports(tmp_path: Path) -> None:
    """The reader above on a hand-made package: a lazy import and a relative one are edges."""
    source = ("from __future__ import annotations\n"
              "def f():\n    from hloscope.reports.report import Report\n    return Report\n")
    tree = ast.parse(source)
    found = [target for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             for target in _targets(node, "hloscope.model.example", False)]
    assert "hloscope.reports.report" in found
    relative = ast.parse("from .shape import Shape\n").body[0]
    assert isinstance(relative, ast.ImportFrom)
    assert list(_targets(relative, "hloscope.model.example", False)) == ["hloscope.model.shape"]
    assert strongly_connected({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


FILE_NAME = re.compile(r"^[\w.*-]*\.(json|txt|log|pb|pkl|csv|gz)$")


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)):
            found.add(id(body[0].value))
    return found


def file_name_literals() -> dict[str, set[str]]:
    """Each file name (or file-name suffix) written as a string in hloscope/ -> the modules that
    spell it; docstrings and help-text placeholders (`FILE.json`) are prose, not names."""
    spelled: dict[str, set[str]] = defaultdict(set)
    for name, path in modules().items():
        tree = ast.parse(path.read_text())
        prose = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in prose and FILE_NAME.match(node.value)
                    and not node.value.startswith("FILE.")
                    and not re.fullmatch(r"\.\w+", node.value)):  # a bare extension
                spelled[node.value].add(name)
    return spelled


def test_each_file_name_is_spelled_in_one_module() -> None:
    """An on-disk name (manifest.json, sweep.json, compile.log, XLA's dump suffixes) has one
    owner; everything else asks that module."""
    spelled = file_name_literals()
    assert "manifest.json" in spelled and "sweep.json" in spelled  # the reader sees them at all
    shared = {name: sorted(owners) for name, owners in spelled.items() if len(owners) > 1}
    assert not shared, shared


ANALYSES = PACKAGE / "analyses"
FILE_METHODS = frozenset({"read_text", "read_bytes", "write_text", "write_bytes", "exists",
                          "is_file", "is_dir", "glob", "rglob", "iterdir", "open", "listdir",
                          "scandir"})
FILE_MODULES = frozenset({"hloscope.loader.hlo_input", "hloscope.parsers.trace.xprof", "os",
                          "io", "gzip", "bz2", "lzma", "shutil", "tempfile", "subprocess",
                          "glob", "zipfile", "tarfile"})
READER_NAME = re.compile(r"(load|read|find)_\w+")
READING_METHODS = frozenset({"log_text", "compile_log"})  # formats objects that read on call


def file_access(path: Path, name: str) -> list[str]:
    """Where the module at `path` (named `name`) reads files: `open(...)`, a path's or os's file
    methods (`.read_text`, `.exists`, `.glob` ...), a reading method of a loaded object
    (`.read_usage_report()`, `build.log_text()`), an import of the HLO loader, of xprof's
    converter or of a file module, or of a reader function (`load_*`, `read_*`, `find_*`)."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and (
                node.func.id == "open"):
            found.append(f"{name}:{node.lineno} calls open()")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                READER_NAME.fullmatch(node.func.attr) or node.func.attr in READING_METHODS):
            found.append(f"{name}:{node.lineno} calls .{node.func.attr}()")
        elif isinstance(node, ast.Attribute) and node.attr in FILE_METHODS:
            found.append(f"{name}:{node.lineno} uses .{node.attr}")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            found.extend(_file_imports(node, name, path.name == "__init__.py"))
    return found


def _file_imports(node: ast.Import | ast.ImportFrom, name: str, is_package: bool) -> list[str]:
    found = [f"{name}:{node.lineno} imports {target}"
             for target in _targets(node, name, is_package)
             if (_resolve(target) if target.startswith("hloscope") else target.split(".")[0])
             in FILE_MODULES]
    if isinstance(node, ast.ImportFrom):
        found += [f"{name}:{node.lineno} imports {alias.name}" for alias in node.names
                  if READER_NAME.fullmatch(alias.name)]
    return found


def test_analyses_read_no_files() -> None:
    """Analyses are pure: the loader (or the caller) reads, they compute from what it read."""
    accesses = [access for name, path in modules().items()
                if path.is_relative_to(ANALYSES) for access in file_access(path, name)]
    assert len([p for p in modules().values() if p.is_relative_to(ANALYSES)]) > 10
    assert not accesses, "\n".join(accesses)


def test_the_file_access_checker_sees_reads(tmp_path: Path) -> None:
    """The check above on hand-made modules, each reading a file one way."""
    samples = {
        "opens": "def f(p):\n    with open(p) as stream:\n        return stream.read()\n",
        "reads": "def f(p):\n    return p.read_text()\n",
        "probes": "def f(p):\n    return p.exists() or p.is_file() or p.is_dir()\n",
        "globs": "def f(p):\n    return list(p.glob('*')) + list(p.iterdir())\n",
        "loads": "def f(p):\n    from hloscope.loader.hlo_input import load_input\n"
                 "    return load_input(p)\n",
        "finds": "from hloscope.parsers.xla_memory import find_memory_artifacts\n",
        "xprof": "from hloscope.parsers.trace import xprof\n",
        "logs": "def f(build):\n    return build.log_text()\n",
        "reports": "def f(artifacts):\n    return artifacts.read_usage_report()\n",
        "os": "import os.path\n",
    }
    for stem, source in samples.items():
        path = tmp_path / f"{stem}.py"
        path.write_text(source)
        assert file_access(path, f"hloscope.analyses.{stem}"), stem
    pure = tmp_path / "pure.py"
    pure.write_text("from hloscope.loader.build import LoadedBuild\n"
                    "def f(loaded: LoadedBuild) -> str:\n    return loaded.log_text\n")
    assert file_access(pure, "hloscope.analyses.pure") == []
