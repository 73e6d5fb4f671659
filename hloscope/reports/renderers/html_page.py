"""The page `hloscope report` writes: sections of Reports and inline SVG figures.

A `Page` is presentation only: factories (`html_report`) fill it from analysis results, and
`render_page` turns it into one self-contained HTML document (see `html.py` for escaping and
the no-network rule).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

from hloscope.reports.renderers.html import heading, page, report_html
from hloscope.reports.report import Report


@dataclass(slots=True)
class Figure:
    """An inline SVG with a caption; `attributes` become `data-*` attributes of <figure>."""

    kind: str
    caption: str
    svg: str
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Section:
    anchor: str
    title: str
    blocks: list[Report | Figure] = field(default_factory=list)


@dataclass(slots=True)
class Page:
    title: str
    sections: list[Section] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def render_page(report_page: Page) -> str:
    nav = " ".join(f'<a href="#{escape(s.anchor)}">{escape(s.title)}</a>'
                   for s in report_page.sections)
    parts = [heading(report_page.title, 1), f"<nav>{nav}</nav>"]
    parts += [_section(section, opened=n == 0)
              for n, section in enumerate(report_page.sections)]
    parts += [f'<p class="muted">{escape(note)}</p>' for note in report_page.notes]
    return page(report_page.title, "\n".join(parts))


def _section(section: Section, opened: bool) -> str:
    """A collapsible section: the first is open, the others one click away."""
    blocks = [_block(block) for block in section.blocks]
    return (f'<section data-section="{escape(section.anchor)}">\n'
            f"<details{' open' if opened else ''}><summary>"
            f"{heading(section.title, 2, section.anchor)}</summary>\n" + "\n".join(blocks)
            + "\n</details></section>")


def _block(block: Report | Figure) -> str:
    if isinstance(block, Report):
        return report_html(block, level=3)
    attributes = "".join(f' data-{escape(key)}="{escape(value)}"'
                         for key, value in block.attributes.items())
    return (f'<figure data-figure="{escape(block.kind)}"{attributes}>{block.svg}'
            f"<figcaption>{escape(block.caption)}</figcaption></figure>")
