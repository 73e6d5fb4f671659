"""`hloscope inspect` end to end through the click app: formats, exit codes, inputs."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from click.testing import CliRunner
from conftest import CORPUS, require_corpus
from small_modules import GOOD

from hloscope.cli.main import cli


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(cli, list(args), input=input)


def test_json_schema_and_counts(tmp_path: Path) -> None:
    path = tmp_path / "m.hlo"
    path.write_text(GOOD)
    result = run("inspect", str(path), "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["schema"] == "hloscope/inspect/v1"
    assert data["instruction_count"] == 6
    assert data["computation_count"] == 2
    assert data["op_counts"] == {"parameter": 3, "add": 1, "constant": 1, "reduce": 1}
    assert data["parameter_bytes"] == 32 and data["output_bytes"] == 4
    assert data["is_scheduled"] is True
    # reduce of f32[8] with an add: 8 - 1 additions; bytes: 32 in + 4 init + 4 out (XLA's rules)
    assert data["total_flops"] == 7 and data["total_bytes_accessed"] == 40
    assert data["remat_instructions"] == 0 and data["xla_remat_instructions"] == 0


def test_text_markdown_csv_and_output_file(tmp_path: Path) -> None:
    path = tmp_path / "m.hlo.gz"
    path.write_bytes(gzip.compress(GOOD.encode()))
    text = run("inspect", str(path))
    assert text.exit_code == 0 and "Module m" in text.output and "32 B" in text.output
    markdown = run("inspect", str(path), "--format", "markdown")
    assert "| opcode" in markdown.output
    out = tmp_path / "counts.csv"
    assert run("inspect", str(path), "-o", str(out)).exit_code == 0
    assert out.read_text().splitlines()[0] == "opcode,count,share"
    refused = run("inspect", str(path), "-o", str(out))
    assert refused.exit_code == 2 and "--force" in refused.output
    assert run("inspect", str(path), "-o", str(out), "--force").exit_code == 0


def test_stdin() -> None:
    result = run("inspect", "-", "--format", "json", input=GOOD)
    assert result.exit_code == 0
    assert json.loads(result.output)["module_name"] == "m"


def test_missing_file_exits_3(tmp_path: Path) -> None:
    result = run("inspect", str(tmp_path / "absent.hlo"))
    assert result.exit_code == 3
    assert "no such file" in result.output and "Traceback" not in result.output


def test_garbled_file_exits_4_with_location(tmp_path: Path) -> None:
    path = tmp_path / "bad.hlo"
    path.write_text(GOOD.replace("%zero), dimensions", "%zero) dimensions"))
    result = run("inspect", str(path))
    assert result.exit_code == 4
    column = GOOD.splitlines()[11].index("dimensions")  # 0-based, one char less after the edit
    assert f"{path}:12:{column}: error: expected ','" in result.output
    assert result.output.splitlines()[-1].index("^") == column + 1
    assert "Traceback" not in result.output


def test_truncated_maxtext_dump_exits_4() -> None:
    require_corpus()
    path = CORPUS / "maxtext__tests__utils__reference_hlo_deepseek3.txt"
    result = run("inspect", str(path))
    assert result.exit_code == 4
    assert ":2000:" in result.output and "truncated" in result.output


def test_multi_module_file_lists_the_others() -> None:
    require_corpus()
    path = CORPUS / "xla__service__gpu__tests__scatter.hlo"
    result = run("inspect", str(path), "--format", "json")
    data = json.loads(result.output)
    assert len(data["other_modules"]) == 4
    picked = run("inspect", str(path), "--module", "ScalarUpdate", "--format", "json")
    assert json.loads(picked.output)["module_name"] == "ScalarUpdate"
    unknown = run("inspect", str(path), "--module", "Nope")
    assert unknown.exit_code == 3 and "ScalarUpdate" in unknown.output


def test_inspect_peak_equals_xla_live_range_peak() -> None:
    """On a loop-free CPU program the text-only live peak is XLA's live-range peak."""
    from conftest import FIXTURES

    from hloscope.parsers.xla_memory import find_memory_artifacts

    folder = FIXTURES / "cpu" / "remat-none"
    result = run("inspect", str(folder), "--format", "json")
    expected = find_memory_artifacts(folder).read_live_range().peak_bytes
    assert json.loads(result.output)["peak_bytes"] == expected
