"""The one registry of output formats: name <-> file suffixes <-> renderer.

It drives the CLI's `--format` choices and help text, and infers the format from `-o FILE`'s
suffix. An explicit format always wins over the suffix. To add a format, write a module with
`render(report) -> str` and add one `OutputFormat` to `FORMATS`.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath

from hloscope.errors import UsageError
from hloscope.reports.renderers import csv, html, json, markdown, text
from hloscope.reports.report import Report

DEFAULT_FORMAT = "text"
STDOUT = "-"


@dataclass(frozen=True, slots=True)
class OutputFormat:
    name: str
    suffixes: tuple[str, ...]
    description: str
    render: Callable[[Report], str]


FORMATS: tuple[OutputFormat, ...] = (
    OutputFormat("text", (".txt",), "aligned plain-text tables", text.render),
    OutputFormat("markdown", (".md", ".markdown"), "GitHub-flavoured Markdown", markdown.render),
    OutputFormat("json", (".json",), "the full result, schema hloscope/<command>/v1", json.render),
    OutputFormat("csv", (".csv",), "the primary table, raw integers", csv.render),
    OutputFormat("html", (".html", ".htm"), "a self-contained page", html.render),
)


def format_names() -> list[str]:
    return [output_format.name for output_format in FORMATS]


def known_suffixes() -> list[str]:
    return [suffix for output_format in FORMATS for suffix in output_format.suffixes]


def get_format(name: str) -> OutputFormat:
    for output_format in FORMATS:
        if output_format.name == name.lower():
            return output_format
    raise UsageError(f"unknown format {name!r}; choose one of: {', '.join(format_names())}")


def format_for_suffix(path: str | PurePath) -> OutputFormat | None:
    """The format a file name implies (case-insensitive suffix), or None."""
    suffix = PurePath(path).suffix.lower()
    for output_format in FORMATS:
        if suffix in output_format.suffixes:
            return output_format
    return None


def resolve_format(name: str | None, output: str | PurePath | None) -> OutputFormat:
    """An explicit `name` wins; else the suffix of `output`; else text (stdout, or `-`)."""
    if name is not None:
        return get_format(name)
    if output is None or str(output) == STDOUT:
        return get_format(DEFAULT_FORMAT)
    inferred = format_for_suffix(output)
    if inferred is None:
        raise UsageError(f"cannot tell the output format of {str(output)!r} from its suffix; "
                         f"name the file with one of {', '.join(known_suffixes())} "
                         "or pass --format")
    return inferred


def render(report: Report, name: str = DEFAULT_FORMAT) -> str:
    """The report in the named format, as a string."""
    return get_format(name).render(report)


def describe_formats() -> str:
    """For help text: "text (.txt), markdown (.md, .markdown), json (.json), csv (.csv)"."""
    return ", ".join(f"{f.name} ({', '.join(f.suffixes)})" for f in FORMATS)
