"""issue 21, item 6: `trace` says what it cannot show, refuses MFU against another device, names
ops by op_name and source, and reads the trace fixture's own gzipped `hlo/` dump folder.

Truths: the fixture's HLO text itself (module name, each instruction's op_name, read with a
regex from the decompressed file), the trace's planes (a host-only CPU capture), and the live
peak of the HLO from the memory analysis of the file given directly.
"""
from __future__ import annotations

import gzip
import json
import re

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from hloscope.cli.main import cli
from hloscope.reports.trace import demangle

FOLDER = FIXTURES / "cpu-trace" / "full-scan"
HLO_DIR = FOLDER / "hlo"
HLO = next(HLO_DIR.glob("*.txt.gz"))
TEXT = gzip.decompress(HLO.read_bytes()).decode()


def _invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_gzipped_dump_folder_is_read() -> None:
    result = _invoke("inspect", str(HLO_DIR), "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["module_name"] == re.search(r"^HloModule (\S+?),", TEXT, re.M).group(1)
    instructions = len(re.findall(r"^\s+(?:ROOT )?%?[\w.\-]+ = ", TEXT, re.M))
    assert data["instruction_count"] == instructions


def test_trace_reads_the_gzipped_folder_as_hlo() -> None:
    by_folder = _invoke("trace", str(FOLDER), "--hlo", str(HLO_DIR), "--format", "json",
                        "--no-xprof")
    by_file = _invoke("trace", str(FOLDER), "--hlo", str(HLO), "--format", "json", "--no-xprof")
    assert by_folder.exit_code == 0, by_folder.output
    folder, file = json.loads(by_folder.stdout), json.loads(by_file.stdout)
    assert folder["flops_per_step"] == file["flops_per_step"] > 0
    assert folder["hlo_origin"].endswith(HLO.name)


def test_mfu_against_another_device_is_refused() -> None:
    refused = _invoke("trace", str(FOLDER), "--device", "v5e", "--no-xprof")
    assert refused.exit_code == 2
    assert "v5e" in refused.stderr and "CPU" in refused.stderr
    assert "Traceback" not in refused.output
    accepted = _invoke("trace", str(FOLDER), "--device", "cpu", "--no-xprof")
    assert accepted.exit_code == 0, accepted.output


def test_missing_xprof_is_said_in_text_and_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hloscope.loader.trace.available", lambda name: False)
    text = _invoke("trace", str(FOLDER))
    assert text.exit_code == 0, text.output
    line = next(ln for ln in text.stdout.splitlines() if ln.startswith("xprof peak heap"))
    assert "n/a: install hloscope[profile]" in line
    assert any(ln.startswith("live peak") for ln in text.stdout.splitlines())
    data = json.loads(_invoke("trace", str(FOLDER), "--format", "json").stdout)
    assert data["xprof_peak_heap_bytes"] is None
    assert data["xprof_note"].startswith("n/a: install hloscope[profile]")
    peak = json.loads(_invoke("memory", str(HLO), "--format", "json").stdout)["peak_bytes"]
    assert data["live_peak_bytes"] == peak


def test_a_trace_json_says_it_has_no_memory_profile() -> None:
    data = json.loads(_invoke("trace", str(FOLDER), "--json-trace", "--hlo", str(HLO),
                              "--format", "json").stdout)
    assert data["xprof_peak_heap_bytes"] is None and "XSpace" in data["xprof_note"]


def test_op_table_has_op_name_and_demangled_computations() -> None:
    result = _invoke("trace", str(FOLDER), "--by", "op", "--format", "markdown", "--top", "8",
                     "--no-xprof")
    assert result.exit_code == 0, result.output
    block = result.stdout.split("Op self time by instruction", 1)[1].split("\n\n")[1]
    lines = block.splitlines()
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert {"op_name", "source", "computation"} <= set(header)
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines[2:10]]
    for row in rows:
        name, op_name, computation = (row[header.index(k)] for k in
                                      ("instruction", "op_name", "computation"))
        truth = re.search(rf"^\s+(?:ROOT )?%?{re.escape(name)} = .*?op_name=\"([^\"]*)\"",
                          TEXT, re.M)
        assert op_name == (truth.group(1) if truth else "")
        assert not {"wide", "clone", "sunk"} & set(computation.split("."))


@pytest.mark.parametrize(("mangled", "plain"), [
    ("wide.wide.wide.region_26.89.clone.sunk.clone.sunk.clone.clone", "region_26"),
    ("fused_computation.12", "fused_computation"),
    ("body.remat.3", "body.remat"),
    ("main.94", "main"),
])
def test_demangle(mangled: str, plain: str) -> None:
    assert demangle(mangled) == plain
