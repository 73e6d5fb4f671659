"""The text renderer's short view (issue 38, item 2): detail tables, detail columns and detail
notes only with `details`; a `below` column as `row: text` lines under its table, wrapped to the
width and never cut. Truth: a hand-made report whose every cell is known."""
from __future__ import annotations

from hloscope.reports.renderers import markdown, text
from hloscope.reports.report import Column, Report, Table

REASON = " ".join(["because"] * 40)  # 319 characters: wider than any terminal


def report() -> Report:
    variants = Table("variants", "Variants", [
        Column("variant", "variant"), Column("bytes", "memory", "bytes"),
        Column("compile", "compile s", "int", detail=True),
        Column("reason", "reason", below=True)],
        [{"variant": "none", "bytes": 2048, "compile": 7, "reason": REASON},
         {"variant": "full", "bytes": 1024, "compile": 9, "reason": ""}])
    names = Table("names", "Checkpoint names", [Column("name", "name")], [{"name": "qkv"}],
                  detail=True)
    return Report(name="sweep", title="Sweep", tables=[variants, names], notes=["a note"],
                  detail_notes=["about the names"])


def test_the_short_view_leaves_the_detail_out_and_says_so() -> None:
    shown = text.render(report(), width=80, details=False)
    assert "compile s" not in shown and "qkv" not in shown and "about the names" not in shown
    assert "note: a note" in shown
    assert shown.rstrip().endswith("(--details shows every column and 1 more table: "
                                   "Checkpoint names)")


def test_a_below_column_is_printed_whole_under_the_table() -> None:
    shown = text.render(report(), width=80, details=False)
    assert max(len(line) for line in shown.splitlines()) <= 80
    table, below = shown.split("\n\nreason (variant)\n", 1)
    assert "because" not in table and "  full:" not in below  # an empty reason: no line
    lines = below.split("\n\n")[0].splitlines()
    assert lines[0].startswith("  none: because")
    assert all(line.startswith("      ") for line in lines[1:])  # continued under its row
    assert " ".join(" ".join(lines).split())[len("none: "):] == REASON


def test_details_show_everything_as_before() -> None:
    shown = text.render(report(), details=True)
    assert "compile s" in shown and "\nCheckpoint names\n" in shown and "about the names" in shown
    assert REASON in shown and "--details" not in shown
    assert text.render(report()) == shown  # outside the CLI the renderer shows everything


def test_markdown_keeps_the_detail() -> None:
    shown = markdown.render(report())
    assert "compile s" in shown and "qkv" in shown and "about the names" in shown


def test_long_titles_wrap_to_the_width() -> None:
    path = "/".join(["folder"] * 30)  # 209 characters
    long = Report(name="compare", title=f"Compare A: {path}",
                  tables=[Table("t", f"Buffers of {path}", [Column("a", "a")], [{"a": 1}])])
    shown = text.render(long, width=120, details=False)
    assert max(len(line) for line in shown.splitlines()) <= 120
    assert "".join(shown.split()).count("".join(path.split())) == 2  # whole, only wrapped


def test_a_long_path_in_the_summary_is_split_in_place() -> None:
    path = "/".join(["folder"] * 30) + "/module.txt"
    shown = text.render(Report(name="memory", title="Memory", summary=[("source", path),
                                                                       ("backend", "tpu")]),
                        width=120, details=False)
    lines = shown.splitlines()[2:-1]
    assert max(len(line) for line in lines) <= 120 and lines[0].startswith("source:  ")
    assert lines[0].split()[1] == path[:len(lines[0].split()[1])]  # it starts on the key's line
    assert "".join(line.split(maxsplit=1)[-1] if n == 0 else line.strip()
                   for n, line in enumerate(lines)) == path
