"""The CLI's shared machinery: the error -> exit code mapping, the output options (format
inference, --force) and the HLO input argument. Dummy commands are registered only for a test."""
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result
from conftest import REPO

from hloscope.cli.common import HloInput, emit, hlo_input, output_options
from hloscope.cli.main import EXIT_INTERNAL_ERROR, cli
from hloscope.errors import (
    EXIT_CHECK_FAILED,
    HloscopeError,
    InputError,
    OutputExistsError,
    ParseError,
    SourceLocation,
    UsageError,
)
from hloscope.reports import Column, Report, Table


class _GateFailed(HloscopeError):
    """An error carrying exit code 1, as a failed gate's would."""

    exit_code = EXIT_CHECK_FAILED


ERRORS: dict[str, tuple[Exception, int]] = {
    "usage": (UsageError("unknown device 'v9'"), 2),
    "missing": (InputError("x.hlo: no such file or directory"), 3),
    "malformed": (ParseError("expected ')'", SourceLocation("x.hlo", 3, 7), "  %a = f32[ add"), 4),
    "check": (_GateFailed("peak grew by 5.0% (limit 2%)"), 1),
    "exists": (OutputExistsError("r.json already exists; pass --force to overwrite it"), 2),
    "click-usage": (click.UsageError("bad option combination"), 2),
    "internal": (RuntimeError("boom\nsecond line"), EXIT_INTERNAL_ERROR),
    "key": (KeyError("weights"), EXIT_INTERNAL_ERROR),
}


@click.command("raise-error")
@click.argument("kind", type=click.Choice(sorted(ERRORS)))
def _raise_error(kind: str) -> None:
    raise ERRORS[kind][0]


def _sample_report() -> Report:
    table = Table("buffers", "Buffers", [Column("name", "Name"), Column("bytes", "Bytes", "bytes")],
                  [{"name": "p0", "bytes": 1536}])
    return Report(name="sample", title="sample report", summary=[("buffers", 1)], tables=[table],
                  data={"bytes": 1536})


RAN: list[str] = []


@click.command("write-report")
@output_options
def _write_report(fmt: str, output: Path | None, force: bool) -> None:
    RAN.append(fmt)
    emit(_sample_report(), fmt, output, force)


@click.command("show-input")
@hlo_input()
def _show_input(hlo: HloInput) -> None:
    click.echo(f"{hlo.source}|{hlo.module}")


@click.command("show-pair")
@hlo_input("before", "after")
def _show_pair(before: HloInput, after: HloInput) -> None:
    click.echo(f"{before.source}|{after.source}|{before.module}|{after.module}")


@click.command("count")
@hlo_input()
def _count(hlo: HloInput) -> None:
    click.echo(str(len(hlo.load().entry.instructions)))


DUMMIES = [_raise_error, _write_report, _show_input, _show_pair, _count]


@pytest.fixture(autouse=True)
def _registered() -> Iterator[None]:
    for command in DUMMIES:
        cli.add_command(command)
    RAN.clear()
    yield
    for command in DUMMIES:
        cli.commands.pop(command.name or "", None)


def _run(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=stdin, prog_name="hloscope")


# --- errors ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", sorted(ERRORS))
def test_error_exit_codes_without_traceback(kind: str) -> None:
    result = _run("raise-error", kind)
    assert result.exit_code == ERRORS[kind][1]
    assert "Traceback" not in result.output
    assert result.stdout == ""


@pytest.mark.parametrize("kind", ["usage", "missing", "check", "exists"])
def test_user_errors_print_error_message(kind: str) -> None:
    result = _run("raise-error", kind)
    assert result.stderr == f"error: {ERRORS[kind][0]}\n"


def test_parse_error_keeps_its_location_and_caret() -> None:
    lines = _run("raise-error", "malformed").stderr.splitlines()
    assert lines[0] == "x.hlo:3:7: error: expected ')'"
    assert lines[2].endswith("^")


def test_internal_error_is_one_line_and_a_hint() -> None:
    lines = _run("raise-error", "internal").stderr.splitlines()
    assert lines == [
        "error: internal error: RuntimeError: boom second line",
        "hint: this is a bug in hloscope; please report it with the command you ran "
        "(HLOSCOPE_DEBUG=1 shows the traceback)",
    ]


def test_debug_variable_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HLOSCOPE_DEBUG", "1")
    result = _run("raise-error", "internal")
    assert result.exit_code == EXIT_INTERNAL_ERROR
    assert "Traceback" in result.stderr


@pytest.mark.parametrize("args", [["no-such-command"], ["raise-error"], ["raise-error", "nope"],
                                  ["write-report", "--bogus"], ["write-report", "--format", "xml"]])
def test_click_usage_errors_exit_2(args: list[str]) -> None:
    result = _run(*args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_help_and_version() -> None:
    for flag in ("--help", "-h"):
        result = _run(flag)
        assert result.exit_code == 0
        assert "Usage: hloscope" in result.stdout
    result = _run("--version")
    assert result.exit_code == 0
    assert result.stdout.startswith("hloscope ")


def test_standalone_main_returns_the_code_when_asked() -> None:
    assert cli.main(["raise-error", "check"], standalone_mode=False) == 1


# --- output options ----------------------------------------------------------------------------

def test_default_is_text_on_stdout() -> None:
    result = _run("write-report")
    assert result.exit_code == 0
    assert result.stdout.startswith("sample report\n")
    assert "1.50 KiB" in result.stdout


def test_format_option_on_stdout() -> None:
    result = _run("write-report", "--format", "json")
    assert json.loads(result.stdout) == {"schema": "hloscope/sample/v1", "bytes": 1536}
    assert _run("write-report", "--format", "JSON").exit_code == 0


@pytest.mark.parametrize(("name", "marker"), [("r.json", '{\n  "schema"'), ("r.md", "# sample"),
                                              ("r.csv", "name,bytes\np0,1536"),
                                              ("r.txt", "sample report")])
def test_format_inferred_from_output_suffix(tmp_path: Path, name: str, marker: str) -> None:
    target = tmp_path / name
    result = _run("write-report", "-o", str(target))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert target.read_text().startswith(marker)


def test_unknown_suffix_is_a_usage_error(tmp_path: Path) -> None:
    result = _run("write-report", "-o", str(tmp_path / "r.xyz"))
    assert result.exit_code == 2
    assert ".json" in result.stderr and ".csv" in result.stderr
    assert RAN == []
    result = _run("write-report", "-o", str(tmp_path / "r.xyz"), "--format", "csv")
    assert result.exit_code == 0
    assert (tmp_path / "r.xyz").read_text().startswith("name,bytes")


def test_existing_output_needs_force(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    target.write_text("keep me")
    result = _run("write-report", "-o", str(target))
    assert result.exit_code == 2
    assert "--force" in result.stderr
    assert "Traceback" not in result.output
    assert target.read_text() == "keep me"
    assert RAN == [], "the refusal comes before the command runs"
    result = _run("write-report", "-o", str(target), "--force")
    assert result.exit_code == 0
    assert json.loads(target.read_text())["bytes"] == 1536


def test_dash_output_is_stdout() -> None:
    result = _run("write-report", "-o", "-", "--format", "csv")
    assert result.stdout == "name,bytes\np0,1536\n"


# --- HLO input ---------------------------------------------------------------------------------

def test_hlo_input_collects_path_and_module() -> None:
    assert _run("show-input", "dump/").stdout == "dump/|None\n"
    assert _run("show-input", "-", "--module", "jit_f").stdout == "-|jit_f\n"


def test_hlo_input_keeps_argument_order() -> None:
    result = _run("show-pair", "a.hlo", "b.hlo", "--module", "m")
    assert result.stdout == "a.hlo|b.hlo|m|m\n"


def test_hlo_input_is_required() -> None:
    assert _run("show-input").exit_code == 2


SMALL = """HloModule m

ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %n = f32[8]{0} negate(%p)
}
"""


def test_hlo_input_loads_file_and_stdin(tmp_path: Path) -> None:
    path = tmp_path / "m.hlo"
    path.write_text(SMALL)
    assert _run("count", str(path)).stdout == "2\n"
    assert _run("count", "-", stdin=SMALL).stdout == "2\n"


def test_missing_and_malformed_input_exit_codes(tmp_path: Path) -> None:
    result = _run("count", str(tmp_path / "absent.hlo"))
    assert result.exit_code == 3
    assert result.stderr.startswith("error: ")
    bad = tmp_path / "bad.hlo"
    bad.write_text(SMALL.replace("negate(%p)", "negate(%p"))
    result = _run("count", str(bad))
    assert result.exit_code == 4
    assert result.stderr.startswith(f"{bad}:")
    assert "Traceback" not in result.output


# --- the installed entry points ----------------------------------------------------------------

def test_cli_does_not_import_jax_and_the_shim_runs() -> None:
    code = ("import sys; import hloscope.cli.main; "
            "assert 'jax' not in sys.modules, 'importing the CLI imported jax'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
    shim = subprocess.run([sys.executable, "cli.py", "--version"], cwd=REPO,
                          capture_output=True, text=True, check=False)
    assert shim.returncode == 0
    assert shim.stdout.startswith("hloscope ")


def test_closed_stdout_exits_quietly() -> None:
    code = ("import click, sys\n"
            "from hloscope.cli.main import cli\n"
            "@cli.command('spam')\n"
            "def spam():\n"
            "    for _ in range(100000): sys.stdout.write('x' * 100 + '\\n')\n"
            "cli.main(['spam'], prog_name='hloscope')\n")
    process = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.read(10)
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == 141
    assert "Traceback" not in stderr
