"""Reports: unit formatting and parsing, each renderer on a hand-built Report, the format registry
and atomic, no-clobber output."""
from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hloscope.errors import OutputExistsError, UsageError
from hloscope.reports import Column, Quantity, Report, Table, render, resolve_format, write_report
from hloscope.reports.registry import FORMATS, format_for_suffix, format_names, known_suffixes
from hloscope.reports.renderers import json as json_renderer
from hloscope.units import (
    BINARY_UNITS,
    format_bytes,
    format_flops,
    format_seconds,
    parse_bytes,
    parse_threshold,
)

GiB = 1024**3


# --- units -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("count", "expected"), [
    (0, "0 B"),
    (1, "1 B"),
    (1023, "1023 B"),
    (1024, "1.00 KiB"),
    (1536, "1.50 KiB"),
    (10 * 1024, "10.0 KiB"),
    (512 * 1024**2, "512 MiB"),
    (1024**2 - 1, "1.00 MiB"),
    (3 * GiB // 2, "1.50 GiB"),
    (int(15.75 * GiB), "15.8 GiB"),
    (1024**4, "1.00 TiB"),
    (-1536, "-1.50 KiB"),
    (99_909_636, "95.3 MiB"),
])
def test_format_bytes(count: int, expected: str) -> None:
    assert format_bytes(count) == expected


@pytest.mark.parametrize(("count", "expected"), [
    (0, "0 FLOP"),
    (999, "999 FLOP"),
    (1000, "1.00 kFLOP"),
    (999_999, "1.00 MFLOP"),
    (12_345_000_000, "12.3 GFLOP"),
    (28_240_000_000_000, "28.2 TFLOP"),
    (123 * 10**15, "123 PFLOP"),
])
def test_format_flops(count: int, expected: str) -> None:
    assert format_flops(count) == expected


@pytest.mark.parametrize(("seconds", "expected"), [
    (0, "0 s"),
    (0.0002597599658119658, "260 µs"),
    (0.6677, "668 ms"),
    (0.9996, "1.00 s"),
    (1.0692, "1.07 s"),
    (12.5, "12.5 s"),
    (3e-9, "3.00 ns"),
    (-0.5, "-500 ms"),
])
def test_format_seconds(seconds: float, expected: str) -> None:
    assert format_seconds(seconds) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("4096", 4096),
    ("16GiB", 16 * GiB),
    (" 16 gib ", 16 * GiB),
    ("1.5GB", 1_500_000_000),
    ("2KB", 2000),
    ("2kB", 2000),
    ("0.5KiB", 512),
    ("7 MiB", 7 * 1024**2),
    ("15.75G", int(15.75 * GiB)),
    ("1B", 1),
    ("3 bytes", 3),
    ("1TB", 10**12),
])
def test_parse_bytes(text: str, expected: int) -> None:
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "2%", "-5", "5XB", "1.5", "nan", "1e9", "GiB",
                                  "1.2.3", "16 GiB extra"])
def test_parse_bytes_refuses_nonsense(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_bytes(text)
    assert caught.value.exit_code == 2


def test_parse_bytes_explains_a_percentage() -> None:
    with pytest.raises(UsageError, match="percentage"):
        parse_bytes("2%")


def test_parse_threshold() -> None:
    relative = parse_threshold("2%")
    assert relative.fraction == pytest.approx(0.02)
    assert relative.limit(1000) == pytest.approx(20)
    assert parse_threshold("64MiB").bytes == 64 * 1024**2
    assert str(parse_threshold("64MiB")) == "64.0 MiB"


@given(st.integers(1, 1023), st.integers(0, len(BINARY_UNITS) - 2))
def test_exact_multiples_round_trip(multiple: int, exponent: int) -> None:
    count = multiple * 1024**exponent
    assert parse_bytes(format_bytes(count)) == count
    assert parse_bytes(f"{multiple}{BINARY_UNITS[exponent]}") == count


@given(st.integers(1, 10**6), st.sampled_from([("KB", 10**3), ("MB", 10**6), ("GB", 10**9)]))
def test_si_units_parse_exactly(multiple: int, unit: tuple[str, int]) -> None:
    assert parse_bytes(f"{multiple}{unit[0]}") == multiple * unit[1]


@given(st.integers(0, 2**62))
def test_formatting_keeps_three_significant_digits(count: int) -> None:
    assert abs(parse_bytes(format_bytes(count)) - count) <= 0.005 * count + 0.5


# --- a hand-built report -----------------------------------------------------------------------

@dataclass
class _Shape:
    dims: tuple[int, ...]


def _report() -> Report:
    params = Table("parameters", "Parameters", [
        Column("name", "Name"),
        Column("bytes", "Bytes", "bytes"),
        Column("flops", "FLOPs", "flops"),
        Column("share", "Share", "percent"),
    ], [
        {"name": "p0", "bytes": 3 * GiB // 2, "flops": 12_345_000_000, "share": 0.75},
        {"name": "a|b", "bytes": 512, "flops": None, "share": 0.25},
    ])
    outputs = Table("outputs", "Outputs", [Column("name", "Name"), Column("count", "N", "int")],
                    [{"name": "out", "count": 1234567}])
    return Report(
        name="inspect",
        title="inspect: jit_step",
        summary=[("module", "jit_step"), ("parameter bytes", Quantity(3 * GiB // 2 + 512, "bytes")),
                 ("scheduled", True)],
        tables=[params, outputs],
        notes=["2 other modules in the file: a, b"],
        data={"module_name": "jit_step", "parameter_bytes": 2**53 + 1, "ratio": float("inf"),
              "path": Path("/tmp/x.hlo"), "shape": _Shape((2, 3)), "tags": {"b", "a"}},
    )


def test_json_has_schema_first_and_integer_bytes() -> None:
    text = render(_report(), "json")
    document = json.loads(text)
    assert list(document)[0] == "schema"
    assert document["schema"] == "hloscope/inspect/v1"
    assert document["parameter_bytes"] == 2**53 + 1
    assert isinstance(document["parameter_bytes"], int)
    assert document["ratio"] is None
    assert document["path"] == "/tmp/x.hlo"
    assert document["shape"] == {"dims": [2, 3]}
    assert document["tags"] == ["a", "b"]
    assert text.startswith('{\n  "schema": "hloscope/inspect/v1",')


def test_json_schema_cannot_be_overridden_by_data() -> None:
    report = Report(name="diff", title="t", data={"schema": "other", "n": 1})
    assert json_renderer.document(report) == {"schema": "hloscope/diff/v1", "n": 1}


def test_json_refuses_unknown_objects() -> None:
    with pytest.raises(TypeError, match="object"):
        render(Report(name="x", title="t", data={"thing": object()}), "json")


def test_csv_is_the_primary_table_with_raw_integers() -> None:
    rows = list(csv.reader(io.StringIO(render(_report(), "csv"))))
    assert rows[0] == ["name", "bytes", "flops", "share"]
    assert rows[1] == ["p0", str(3 * GiB // 2), "12345000000", "0.75"]
    assert rows[2] == ["a|b", "512", "", "0.25"]
    assert len(rows) == 3


def test_csv_needs_a_table() -> None:
    with pytest.raises(UsageError, match="no table"):
        render(Report(name="x", title="t"), "csv")


def test_markdown_pipe_table() -> None:
    text = render(_report(), "markdown")
    lines = text.splitlines()
    assert lines[0] == "# inspect: jit_step"
    assert "- **parameter bytes:** 1.50 GiB" in lines
    header = lines.index("## Parameters") + 2
    assert lines[header].startswith("| Name")
    assert lines[header + 1].startswith("|:--") and lines[header + 1].endswith("--:|")
    assert "| p0 " in lines[header + 2] and "1.50 GiB" in lines[header + 2]
    assert "12.3 GFLOP" in lines[header + 2] and "75.0%" in lines[header + 2]
    assert r"a\|b" in lines[header + 3]
    assert lines[-3:] == ["## Notes", "", "- 2 other modules in the file: a, b"]


def test_text_title_summary_tables_notes() -> None:
    text = render(_report(), "text")
    lines = text.splitlines()
    assert lines[0] == "inspect: jit_step"
    summary = lines[2:5]
    assert summary[0].startswith("module:")
    value_columns = {line.index(value) for line, value in
                     zip(summary, ["jit_step", "1.50 GiB", "yes"], strict=True)}
    assert len(value_columns) == 1
    assert "Parameters" in lines and "Outputs" in lines
    assert any("1,234,567" in line for line in lines)
    assert lines[-1] == "note: 2 other modules in the file: a, b"


def test_text_shows_an_empty_table() -> None:
    report = Report(name="x", title="t", tables=[Table("rows", "Rows", [Column("a", "A")])])
    assert "Rows\n(none)" in render(report, "text")


def test_every_registered_format_renders() -> None:
    for output_format in FORMATS:
        assert output_format.render(_report()).endswith("\n")


def test_invalid_column_kind_and_report_name() -> None:
    with pytest.raises(ValueError, match="kind"):
        Column("a", "A", "megabytes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="name"):
        Report(name="Bad Name", title="t")


# --- registry ----------------------------------------------------------------------------------

def test_registry_names_and_suffixes() -> None:
    assert format_names() == ["text", "markdown", "json", "csv", "html"]
    assert {".txt", ".md", ".json", ".csv", ".html"} <= set(known_suffixes())


@pytest.mark.parametrize(("path", "expected"), [
    ("out.json", "json"), ("out.JSON", "json"), ("a/b.md", "markdown"), ("r.csv", "csv"),
    ("r.txt", "text"), ("report.markdown", "markdown"),
])
def test_suffix_inference(path: str, expected: str) -> None:
    assert resolve_format(None, path).name == expected
    assert format_for_suffix(path) is not None


def test_explicit_format_wins_over_suffix() -> None:
    assert resolve_format("csv", "out.json").name == "csv"
    assert resolve_format("json", "out.unknown").name == "json"


def test_stdout_defaults_to_text() -> None:
    assert resolve_format(None, None).name == "text"
    assert resolve_format(None, "-").name == "text"


@pytest.mark.parametrize("path", ["out.xyz", "report"])
def test_unknown_suffix_names_the_known_ones(path: str) -> None:
    with pytest.raises(UsageError) as caught:
        resolve_format(None, path)
    assert ".json" in str(caught.value) and "--format" in str(caught.value)


def test_unknown_format_name() -> None:
    with pytest.raises(UsageError, match="yaml"):
        resolve_format("yaml", None)


# --- output ------------------------------------------------------------------------------------

def test_write_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    write_report(_report(), "json", None, force=False)
    assert json.loads(capsys.readouterr().out)["schema"] == "hloscope/inspect/v1"


def test_write_file_and_refuse_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    write_report(_report(), "json", target, force=False)
    written = target.read_text()
    assert json.loads(written)["module_name"] == "jit_step"
    with pytest.raises(OutputExistsError, match="--force") as caught:
        write_report(_report(), "csv", target, force=False)
    assert caught.value.exit_code == 2
    assert target.read_text() == written
    write_report(_report(), "csv", target, force=True)
    assert target.read_text().startswith("name,bytes")
    assert os.listdir(tmp_path) == ["r.json"]


def test_new_file_gets_the_usual_mode(tmp_path: Path) -> None:
    reference = tmp_path / "reference"
    reference.write_text("")
    target = tmp_path / "r.txt"
    write_report(_report(), "text", target, force=False)
    assert target.stat().st_mode == reference.stat().st_mode


def test_failed_write_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "r.txt"
    target.write_text("old")

    def failing_replace(source: str, destination: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(UsageError, match="No space left"):
        write_report(_report(), "text", target, force=True)
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["r.txt"]


def test_render_failure_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "r.csv"
    with pytest.raises(UsageError):
        write_report(Report(name="x", title="t"), "csv", target, force=False)
    assert not target.exists()


def test_output_into_missing_folder_or_onto_a_folder(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such directory"):
        write_report(_report(), "text", tmp_path / "missing" / "r.txt", force=False)
    with pytest.raises(UsageError, match="directory"):
        write_report(_report(), "text", tmp_path, force=True)
